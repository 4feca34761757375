//! Calendar rules of the reference evaluator, written with chrono independently of the
//! engine's arithmetic: the window (§3.1), `date_trunc` (§3.3) and `date_part` (§3.4).

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Timelike};
use wearhouse::engine::{DatePart, Unit, UserContext, ValidRequest};

pub fn trunc(t: NaiveDateTime, value: u32, unit: Unit) -> NaiveDateTime {
    let n = i64::from(value);
    let d = t.date();
    let midnight = d.and_hms_opt(0, 0, 0).unwrap();
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
    match unit {
        Unit::Minute => {
            midnight + Duration::minutes(i64::from(t.num_seconds_from_midnight() / 60) / n * n)
        }
        Unit::Hour => midnight + Duration::hours(i64::from(t.hour()) / n * n),
        Unit::Day => (epoch + Duration::days((d - epoch).num_days().div_euclid(n) * n))
            .and_hms_opt(0, 0, 0)
            .unwrap(),
        Unit::Week => {
            let monday = NaiveDate::from_ymd_opt(1970, 1, 5).unwrap();
            let weeks = (d - monday).num_days().div_euclid(7);
            (monday + Duration::days(weeks.div_euclid(n) * n * 7))
                .and_hms_opt(0, 0, 0)
                .unwrap()
        }
        Unit::Month => NaiveDate::from_ymd_opt(d.year(), (d.month0() / value * value) + 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap(),
        Unit::Year => {
            NaiveDate::from_ymd_opt(d.year().div_euclid(value as i32) * value as i32, 1, 1)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap()
        }
    }
}

pub fn part(t: NaiveDateTime, p: DatePart) -> i64 {
    let f = |fmt: &str| t.format(fmt).to_string().parse::<i64>().unwrap();
    match p {
        DatePart::Minute => i64::from(t.minute()),
        DatePart::Hour => i64::from(t.hour()),
        DatePart::Day => i64::from(t.day()),
        DatePart::Week => f("%V"),
        DatePart::Month => i64::from(t.month()),
        DatePart::Year => i64::from(t.year()),
        DatePart::Weekday => f("%u"),
        DatePart::WeekOfYear => f("%W"),
        DatePart::DayOfYear => f("%j"),
    }
}

pub fn window(req: &ValidRequest, user: &UserContext) -> (NaiveDateTime, NaiveDateTime) {
    let a = req.timeframe.anchor.and_hms_opt(0, 0, 0).unwrap();
    let p = req.timeframe.past;
    let v = i64::from(p.value);
    let mut start = match p.unit {
        Unit::Minute => a - Duration::minutes(v),
        Unit::Hour => a - Duration::hours(v),
        Unit::Day => a - Duration::days(v),
        Unit::Week => a - Duration::days(7 * v),
        Unit::Month => req
            .timeframe
            .anchor
            .checked_sub_months(chrono::Months::new(p.value))
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap(),
        Unit::Year => req
            .timeframe
            .anchor
            .checked_sub_months(chrono::Months::new(12 * p.value))
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap(),
    };
    let mut end = a + Duration::days(1);
    if let Some(s) = user.ingestion_start {
        start = start.max(s.and_hms_opt(0, 0, 0).unwrap());
    }
    if let Some(e) = user.ingestion_end {
        end = end.min(e.and_hms_opt(0, 0, 0).unwrap() + Duration::days(1));
    }
    (start, end)
}
