//! Scalar UDFs of our own, registered through the plan itself: floating time from a UTC
//! instant and its offset (or the user's zone), `date_trunc` and `date_part` with the exact
//! rules of §3.3–§3.4. Each is one tight loop over a primitive array (no per-row dynamic
//! dispatch); the arithmetic lives in [`crate::engine::time`].

use std::sync::Arc;

use chrono_tz::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int32Array, Int64Array, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Int32Type, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::Expr;

use crate::engine::lang::request::{DatePart, Period};
use crate::engine::time;

/// The floating timestamp type: `Timestamp(Microsecond, None)`.
pub fn floating_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, None)
}

fn micros_arg(a: &ArrayRef) -> Result<&TimestampMicrosecondArray> {
    match a.data_type() {
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            Ok(a.as_primitive::<TimestampMicrosecondType>())
        }
        other => exec_err!("expected a microsecond timestamp, got {other}"),
    }
}

/// `floating_time(instant, offset)`: the row's offset, else the fallback zone, else UTC.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FloatingTime {
    zone: Option<Tz>,
    name: String,
    signature: Signature,
}

impl FloatingTime {
    /// A UDF for one user's fallback zone.
    pub fn new(zone: Option<Tz>) -> Self {
        let name = match zone {
            Some(z) => format!("floating_time[{}]", z.name()),
            None => "floating_time".to_owned(),
        };
        FloatingTime {
            zone,
            name,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    /// `floating_time(instant, offset)` as an expression.
    pub fn call(zone: Option<Tz>, instant: Expr, offset: Expr) -> Expr {
        ScalarUDF::from(FloatingTime::new(zone)).call(vec![instant, offset])
    }
}

impl ScalarUDFImpl for FloatingTime {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(floating_type())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let ts = micros_arg(&arrays[0])?;
        let off = arrays[1].as_primitive_opt::<Int32Type>();
        let out: TimestampMicrosecondArray = match off {
            Some(off) if off.null_count() == 0 => {
                datafusion::arrow::compute::binary(ts, off, |t, o| {
                    t.saturating_add(i64::from(o) * 1_000_000)
                })?
            }
            _ if self.zone.is_none() && off.is_none_or(|o| o.null_count() == o.len()) => {
                ts.unary(|t| t)
            }
            _ => {
                let nulls = Int32Array::new_null(ts.len());
                let off = off.unwrap_or(&nulls);
                (0..ts.len())
                    .map(|i| {
                        ts.is_valid(i).then(|| {
                            let o = off.is_valid(i).then(|| off.value(i));
                            time::to_floating(ts.value(i), o, self.zone)
                        })
                    })
                    .collect()
            }
        };
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// `date_trunc` of a floating timestamp to one period (§3.3).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DateTrunc {
    period: Period,
    name: String,
    signature: Signature,
}

impl DateTrunc {
    /// `date_trunc(period, t)` as an expression.
    pub fn call(period: Period, t: Expr) -> Expr {
        let name = format!("date_trunc[{} {:?}]", period.value, period.unit);
        ScalarUDF::from(DateTrunc {
            period,
            name,
            signature: Signature::any(1, Volatility::Immutable),
        })
        .call(vec![t])
    }
}

impl ScalarUDFImpl for DateTrunc {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(floating_type())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let ts = micros_arg(&arrays[0])?;
        let p = self.period;
        let out: TimestampMicrosecondArray = ts.unary(|t| time::trunc(t, p));
        Ok(ColumnarValue::Array(Arc::new(
            out.with_timezone_opt(None::<String>),
        )))
    }
}

/// `date_part` of a floating timestamp (§3.4), as Int64.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DatePartUdf {
    part: DatePart,
    name: String,
    signature: Signature,
}

impl DatePartUdf {
    /// `date_part(part, t)` as an expression.
    pub fn call(part: DatePart, t: Expr) -> Expr {
        let name = format!("date_part[{part:?}]");
        ScalarUDF::from(DatePartUdf {
            part,
            name,
            signature: Signature::any(1, Volatility::Immutable),
        })
        .call(vec![t])
    }
}

impl ScalarUDFImpl for DatePartUdf {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let ts = micros_arg(&arrays[0])?;
        let p = self.part;
        let out: Int64Array = ts.unary(|t| time::part(t, p));
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}
