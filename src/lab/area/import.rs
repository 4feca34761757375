//! `wearhouse lab import-pscs FILE.csv`: a lab's real patient service centre list replaces its
//! sandbox network. The CSV has a header row naming at least `lab_slug`, `site_code`, `name`,
//! `first_line`, `city`, `state`, `zip_code`, and optionally `lat`, `lng` (default: the ZIP
//! code's centroid), `phone_number` and `capabilities` (`;`-separated, e.g. `stat;...`). Fields
//! may be double-quoted (`""` for a quote). Every row is checked (known lab, known ZIP code,
//! coordinates in range) before anything is written; errors name the line.

use super::zips;
use crate::lab::catalogue::labs;
use crate::store::metadata::lab::pscs::PscRecord;

/// Splits one CSV line into fields (RFC 4180 quoting, no embedded newlines).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Parses the file's text into centres, or one message per bad line.
pub fn parse(text: &str) -> Result<Vec<PscRecord>, Vec<String>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(vec!["the file is empty".into()]);
    };
    let names: Vec<String> = fields(header).iter().map(|h| h.trim().to_owned()).collect();
    let col = |n: &str| names.iter().position(|h| h == n);
    let required = [
        "lab_slug",
        "site_code",
        "name",
        "first_line",
        "city",
        "state",
        "zip_code",
    ];
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|n| col(n).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(vec![format!("the header lacks: {}", missing.join(", "))]);
    }
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in lines {
        let f = fields(line);
        let get = |n: &str| {
            col(n)
                .and_then(|c| f.get(c))
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        };
        let line_no = i + 1;
        let mut problem = |msg: String| errors.push(format!("line {line_no}: {msg}"));
        let values: Vec<Option<String>> = required.iter().map(|n| get(n)).collect();
        if let Some(k) = values.iter().position(Option::is_none) {
            problem(format!("{} is empty", required[k]));
            continue;
        }
        let v: Vec<String> = values.into_iter().flatten().collect();
        if labs::lab_by_slug(&v[0]).is_none() {
            problem(format!(
                "unknown lab {:?}; expected one of: {}",
                v[0],
                labs::slugs()
            ));
            continue;
        }
        let Some(zip) = zips::lookup(&v[6]).filter(|_| zips::is_well_formed(&v[6])) else {
            problem(format!("unknown zip code {:?}", v[6]));
            continue;
        };
        let coord = |n: &str, limit: f64| -> Result<Option<f64>, String> {
            match get(n) {
                None => Ok(None),
                Some(s) => match s.parse::<f64>() {
                    Ok(x) if x.abs() <= limit => Ok(Some(x)),
                    _ => Err(format!("{n} {s:?} is not a number within ±{limit}")),
                },
            }
        };
        let (lat, lng) = match (coord("lat", 90.0), coord("lng", 180.0)) {
            (Ok(a), Ok(b)) => (a.unwrap_or(zip.point.lat), b.unwrap_or(zip.point.lng)),
            (Err(e), _) | (_, Err(e)) => {
                problem(e);
                continue;
            }
        };
        out.push(PscRecord {
            lab_slug: v[0].clone(),
            site_code: v[1].clone(),
            name: v[2].clone(),
            first_line: v[3].clone(),
            city: v[4].clone(),
            state: v[5].clone(),
            zip_code: zip.code.clone(),
            lat,
            lng,
            phone_number: get("phone_number"),
            capabilities: get("capabilities")
                .map(|c| {
                    c.split(';')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quoted_fields_and_defaults_coordinates() {
        let text = "lab_slug,site_code,name,first_line,city,state,zip_code,capabilities\n\
                    quest,Q1,\"Quest, Downtown\",1 A St,Phoenix,AZ,85004,stat;appointment_scheduling_with_lab\n";
        let got = parse(text).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].name, "Quest, Downtown");
        assert_eq!(
            got[0].capabilities,
            vec!["stat", "appointment_scheduling_with_lab"]
        );
        assert!((got[0].lat - 33.4506).abs() < 1e-9);
        let bad = parse(
            "lab_slug,site_code,name,first_line,city,state,zip_code\nnope,1,n,f,c,AZ,85004\nquest,2,n,f,c,AZ,00000\n",
        );
        assert_eq!(bad.unwrap_err().len(), 2);
    }
}
