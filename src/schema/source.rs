//! Rows by source: a source is one (`source_provider`, `source_type`) pair, the unit that
//! provider priority (§3.5 of the query language) ranks and that a timeseries record key
//! starts with. The store hands out timeseries batches of one source each, and the aggregate
//! engine's time-bucket operator reads runs of one source; both find a batch's sources here.
//!
//! Most batches hold one source (one write comes from one device), so the common case is
//! recognised without building any index: a string column whose every value is the same is
//! checked with one pass over its offsets and one comparison of its bytes against themselves.

use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray, UInt32Array};
use datafusion::arrow::buffer::{Buffer, OffsetBuffer};
use datafusion::arrow::error::ArrowError;

/// `n` copies of `value` as one string array, built from one length and a repetition of its
/// bytes rather than value by value (a push's constant source and unit columns, the store's
/// shared source columns). Like building it value by value, it panics when the bytes pass an
/// `i32` offset (2 GiB).
pub fn repeated_str(value: &str, n: usize) -> StringArray {
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(value.len(), n));
    StringArray::new(offsets, Buffer::from_vec(value.as_bytes().repeat(n)), None)
}

/// The rows of one source in a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRows<'a> {
    /// The provider slug ("" for a null).
    pub provider: &'a str,
    /// The source type ("" for a null).
    pub source_type: &'a str,
    /// The source's row indices, ascending; `None` when every row of the batch is this source.
    pub rows: Option<UInt32Array>,
}

/// `Some(s)` when every value of `a` is `s` (nulls read as ""): equal lengths and a buffer
/// that repeats its first value, checked with one comparison of the buffer against itself.
pub fn constant_str(a: &StringArray) -> Option<&str> {
    if a.is_empty() {
        return None;
    }
    if a.null_count() == a.len() {
        return Some("");
    }
    if a.null_count() > 0 {
        return None;
    }
    let offsets = a.value_offsets();
    let k = offsets[1] - offsets[0];
    let uniform = offsets
        .windows(2)
        .fold(true, |same, w| same & (w[1] - w[0] == k));
    if !uniform {
        return None;
    }
    let (lo, hi) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
    let data = &a.value_data()[lo..hi];
    let k = k as usize;
    (data[k..] == data[..data.len() - k]).then(|| a.value(0))
}

/// String columns already proven to repeat one value, remembered by the memory they occupy:
/// the store hands out constant source columns as slices of one shared array, so after the
/// first slice is proven, every other slice lying inside proven memory is recognised without
/// reading its bytes again. A proof holds the two buffers, so their memory cannot be freed and
/// reused by other data while the proof is remembered.
#[derive(Debug, Default)]
pub struct ConstantProofs {
    proofs: Vec<Proof>,
}

#[derive(Debug)]
struct Proof {
    /// The proven offsets' addresses: every offset in them is the first plus a multiple of
    /// one step, and the bytes they span repeat one value.
    offsets: std::ops::Range<usize>,
    /// The start of the values buffer the offsets point into.
    values: usize,
    _keep: (Buffer, Buffer),
}

/// At most this many proofs are kept (the oldest go first): a query over the store's data
/// needs one per source column.
const MAX_PROOFS: usize = 64;

/// The address range of a column's offsets and the start of its values buffer.
fn footprint(a: &StringArray) -> (std::ops::Range<usize>, usize) {
    let offsets = a.value_offsets().as_ptr_range();
    (
        offsets.start as usize..offsets.end as usize,
        a.value_data().as_ptr() as usize,
    )
}

impl ConstantProofs {
    /// [`constant_str`], reading no bytes for a column inside proven memory.
    pub fn constant<'a>(&mut self, a: &'a StringArray) -> Option<&'a str> {
        if a.is_empty() || a.null_count() > 0 {
            return constant_str(a);
        }
        let (offsets, values) = footprint(a);
        let proven = self.proofs.iter().any(|p| {
            p.values == values && p.offsets.start <= offsets.start && offsets.end <= p.offsets.end
        });
        if proven {
            return Some(a.value(0));
        }
        let value = constant_str(a)?;
        if self.proofs.len() == MAX_PROOFS {
            self.proofs.remove(0);
        }
        self.proofs.push(Proof {
            offsets,
            values,
            _keep: (a.offsets().inner().inner().clone(), a.values().clone()),
        });
        Some(value)
    }
}

/// String equality without a `memcmp` call: source names are a few bytes long.
#[inline]
fn short_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// Row `i` of a source column, null as "".
#[inline]
fn text(a: &StringArray, i: usize) -> &str {
    if a.is_valid(i) { a.value(i) } else { "" }
}

/// The sources of the rows of `provider` and `source_type` (two columns of one batch), in
/// first-seen order. A single source comes back with `rows: None`; an empty input gives none.
/// `proofs` remembers constant columns across the batches of one read or one query.
pub fn rows_by_source<'a>(
    provider: &'a StringArray,
    source_type: &'a StringArray,
    proofs: &mut ConstantProofs,
) -> Vec<SourceRows<'a>> {
    if let (Some(p), Some(t)) = (proofs.constant(provider), proofs.constant(source_type)) {
        return vec![SourceRows {
            provider: p,
            source_type: t,
            rows: None,
        }];
    }
    let mut found: Vec<(&str, &str, Vec<u32>)> = Vec::new();
    // The two most recent distinct sources: merged segments alternate between a few, so a row
    // is nearly always one of them and the list is rarely searched.
    let mut recent: [usize; 2] = [usize::MAX, usize::MAX];
    for i in 0..provider.len() {
        let (pv, tv) = (text(provider, i), text(source_type, i));
        let is = |k: usize| {
            found
                .get(k)
                .is_some_and(|(p, t, _)| short_eq(p, pv) && short_eq(t, tv))
        };
        let k = if is(recent[0]) {
            recent[0]
        } else if is(recent[1]) {
            recent.swap(0, 1);
            recent[0]
        } else {
            let k = found
                .iter()
                .position(|(p, t, _)| *p == pv && *t == tv)
                .unwrap_or_else(|| {
                    found.push((pv, tv, Vec::new()));
                    found.len() - 1
                });
            recent = [k, recent[0]];
            k
        };
        found[k].2.push(i as u32);
    }
    found
        .into_iter()
        .map(|(provider, source_type, rows)| SourceRows {
            provider,
            source_type,
            rows: Some(UInt32Array::from(rows)),
        })
        .collect()
}

/// A batch's `source_provider` and `source_type` columns.
pub fn source_columns(batch: &RecordBatch) -> Result<(&StringArray, &StringArray), ArrowError> {
    let column = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| ArrowError::SchemaError(format!("{name} must be a Utf8 column")))
    };
    Ok((column("source_provider")?, column("source_type")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_string_is_its_value_n_times() {
        let a = repeated_str("oura", 3);
        assert_eq!(a, StringArray::from(vec!["oura"; 3]));
        assert_eq!(constant_str(&a), Some("oura"));
        assert_eq!(repeated_str("", 2), StringArray::from(vec![""; 2]));
        assert!(repeated_str("x", 0).is_empty());
    }

    #[test]
    fn constant_columns_are_recognised_exactly() {
        let cases: [(&[Option<&str>], Option<&str>); 6] = [
            (&[Some("oura"), Some("oura"), Some("oura")], Some("oura")),
            (&[Some("oura"), Some("ours")], None),
            (&[Some("ab"), Some("ba")], None),
            (&[Some("a"), Some("aa"), Some("a")], None),
            (&[None, None], Some("")),
            (&[Some("watch"), None], None),
        ];
        for (values, want) in cases {
            let a = StringArray::from(values.to_vec());
            assert_eq!(constant_str(&a), want, "{values:?}");
        }
        let sliced = StringArray::from(vec!["x", "ring", "ring"]).slice(1, 2);
        assert_eq!(constant_str(&sliced), Some("ring"));
    }

    #[test]
    fn interleaved_sources_are_grouped_in_first_seen_order() {
        let provider = StringArray::from(vec!["oura", "apple", "oura", "apple", "oura", "oura"]);
        let kind = StringArray::from(vec!["ring", "watch", "ring", "watch", "ring", "phone"]);
        let got: Vec<(&str, &str, Vec<u32>)> =
            rows_by_source(&provider, &kind, &mut ConstantProofs::default())
                .into_iter()
                .map(|s| (s.provider, s.source_type, s.rows.unwrap().values().to_vec()))
                .collect();
        assert_eq!(
            got,
            vec![
                ("oura", "ring", vec![0, 2, 4]),
                ("apple", "watch", vec![1, 3]),
                ("oura", "phone", vec![5]),
            ]
        );
    }

    #[test]
    fn one_source_needs_no_index() {
        let provider = StringArray::from(vec!["oura"; 3]);
        let kind = StringArray::from(vec!["ring"; 3]);
        assert_eq!(
            rows_by_source(&provider, &kind, &mut ConstantProofs::default()),
            vec![SourceRows {
                provider: "oura",
                source_type: "ring",
                rows: None
            }]
        );
        let empty = StringArray::from(Vec::<&str>::new());
        assert!(rows_by_source(&empty, &empty, &mut ConstantProofs::default()).is_empty());
    }

    #[test]
    fn slices_of_proven_memory_are_recognised_and_others_checked() {
        let mut proofs = ConstantProofs::default();
        let shared = StringArray::from(vec!["apple_health_kit"; 8]);
        assert_eq!(
            proofs.constant(&shared.slice(0, 6)),
            Some("apple_health_kit")
        );
        // Inside the proven slice: answered from the proof.
        assert_eq!(
            proofs.constant(&shared.slice(2, 3)),
            Some("apple_health_kit")
        );
        // Reaching past it: checked again (and still constant).
        assert_eq!(
            proofs.constant(&shared.slice(4, 4)),
            Some("apple_health_kit")
        );
        // Equal-looking memory elsewhere proves nothing: a differing column is still caught.
        let other = StringArray::from(vec!["apple_health_kit", "apple_health_kix"]);
        assert_eq!(proofs.constant(&other), None);
        let mixed = StringArray::from(vec!["oura", "oura", "ours"]);
        assert_eq!(proofs.constant(&mixed.slice(0, 2)), Some("oura"));
        assert_eq!(proofs.constant(&mixed.slice(1, 2)), None);
    }
}
