//! Dates and timestamps of the hybrid Julian/Gregorian calendar, read as Spark reads them
//! (Parquet files Spark wrote in its `LEGACY` rebase mode, `parquet_spark.rs`).
//!
//! Java's `java.util` classes (and the ORC and Parquet writers of Spark 2, Hive and Spark 3+ in
//! `LEGACY` rebase mode) count days in a hybrid calendar: Julian before 1582-10-15, Gregorian
//! from then on. Arrow, Spark 3+ and `java.time` use the proleptic Gregorian calendar. Spark
//! reads a hybrid value by keeping its local fields (year, month, day, time of day) and
//! counting them again in the proleptic calendar (`RebaseDateTime.rebaseJulianToGregorian*`):
//! the functions here do the same, value for value.
//!
//! For timestamps the local fields are those of a time zone, and Spark takes them with
//! `java.util.TimeZone`, which leaves out every transition before 1900 and gives the zone's
//! last standard offset for every instant before 1900-01-01T00:00Z (no local mean time), and
//! counts them back with `java.time`, which has the whole IANA history. So an instant before
//! 1900 moves by the difference: 7 min 2 s in America/Los_Angeles before 1883-11-18 (LMT
//! -7:52:58 against -8:00), 8 min 50 s in Asia/Kolkata (MMT +5:21:10 against +5:30).
//! `java_util_offset` is the first, `chrono-tz` (IANA) the second. (ORC's hybrid-calendar
//! values are rebased inside `vendor/orc-rust`.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_schema::{DataType, TimeUnit};
use chrono::{Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone};
use chrono_tz::{OffsetComponents, Tz};

/// 1582-10-15, the first Gregorian day of the hybrid calendar, in days since 1970-01-01.
pub(crate) const GREGORIAN_START_DAY: i32 = -141_427;
/// 1900-01-01T00:00:00Z in seconds: `java.util.TimeZone` knows no transition before it.
const UTC_1900: i64 = -2_208_988_800;
/// Julian day number of 1970-01-01.
const JDN_1970: i64 = 2_440_588;
const DAY_SECS: i64 = 86_400;

/// The proleptic Gregorian day of a hybrid-calendar day (Spark's
/// `rebaseJulianToGregorianDays`): the same year, month and day; days from 1582-10-15 on are
/// the same in both calendars. A Julian 29 February of a year that is not a Gregorian leap year
/// becomes 1 March, as in Spark.
pub(crate) fn julian_to_gregorian_days(days: i32) -> i32 {
    if days >= GREGORIAN_START_DAY {
        return days;
    }
    let (y, m, d) = julian_fields(days as i64);
    proleptic_days(y, m, d).map_or(days, |g| g as i32)
}

/// Year, month and day of the Julian calendar for a day count since 1970-01-01 (E. G.
/// Richards' algorithm over the Julian day number; astronomical years).
fn julian_fields(days: i64) -> (i64, u32, u32) {
    let c = days + JDN_1970 + 32_082;
    let d = (4 * c + 3).div_euclid(1461);
    let e = c - (1461 * d).div_euclid(4);
    let m = (5 * e + 2).div_euclid(153);
    let day = e - (153 * m + 2).div_euclid(5) + 1;
    let month = m + 3 - 12 * m.div_euclid(10);
    let year = d - 4800 + m.div_euclid(10);
    (year, month as u32, day as u32)
}

/// Days since 1970-01-01 of year-month-1 plus `day - 1` days, proleptic Gregorian.
fn proleptic_days(y: i64, m: u32, d: u32) -> Option<i64> {
    let first = NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, m, 1)?;
    let date = first.checked_add_signed(Duration::days(d as i64 - 1))?;
    Some(date.num_days_from_ce() as i64 - 719_163)
}

/// The zone's last standard offset, which `java.util.TimeZone` gives for every instant before
/// 1900 ("prior to the transition table, returns the raw offset"), found once per zone.
fn raw_offset(tz: Tz) -> i64 {
    static CACHE: OnceLock<Mutex<HashMap<Tz, i64>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(o) = cache.lock().ok().and_then(|c| c.get(&tz).copied()) {
        return o;
    }
    // 2100-01-01: the zone's last rule.
    let o = chrono::DateTime::from_timestamp(4_102_444_800, 0)
        .map(|d| {
            let off = tz.offset_from_utc_datetime(&d.naive_utc());
            off.base_utc_offset().num_seconds()
        })
        .unwrap_or(0);
    if let Ok(mut c) = cache.lock() {
        c.insert(tz, o);
    }
    o
}

/// The offset of `tz` at `utc_secs` as `java.util.TimeZone` gives it: the IANA offset from
/// 1900-01-01T00:00Z on, the zone's last standard offset before. The second value is whether
/// daylight saving time is in effect.
fn java_util_offset(tz: Tz, utc_secs: i64) -> (i64, bool) {
    if utc_secs < UTC_1900 {
        return (raw_offset(tz), false);
    }
    let Some(at) = chrono::DateTime::from_timestamp(utc_secs, 0) else {
        return (raw_offset(tz), false);
    };
    let off = tz.offset_from_utc_datetime(&at.naive_utc());
    let dst = off.dst_offset().num_seconds() != 0;
    (off.fix().local_minus_utc() as i64, dst)
}

/// The proleptic Gregorian instant (microseconds since the epoch) of a hybrid-calendar
/// instant, by its local fields in `tz` (Spark's `rebaseJulianToGregorianMicros`). Instants
/// from 1900 on (with a day to spare for offsets) are the same in both and returned as they
/// are, as Spark's rebase tables do.
pub(crate) fn julian_to_gregorian_micros(tz: Tz, micros: i64) -> i64 {
    if micros >= (UTC_1900 + DAY_SECS) * 1_000_000 {
        return micros;
    }
    let secs = micros.div_euclid(1_000_000);
    let sub = micros.rem_euclid(1_000_000);
    let (off, dst) = java_util_offset(tz, secs);
    let local = secs + off;
    let days = local.div_euclid(DAY_SECS);
    let tod = local.rem_euclid(DAY_SECS);
    let greg_days = if days >= GREGORIAN_START_DAY as i64 {
        days
    } else {
        let (y, m, d) = julian_fields(days);
        match proleptic_days(y, m, d) {
            Some(g) => g,
            None => return micros,
        }
    };
    let Some(naive) =
        chrono::DateTime::from_timestamp(greg_days * DAY_SECS + tod, 0).map(|d| d.naive_utc())
    else {
        return micros;
    };
    local_to_utc(tz, naive, dst).map_or(micros, |s| s * 1_000_000 + sub)
}

/// `LocalDateTime.atZone(zone)` as `java.time` resolves it: a time in a gap moves later by the
/// gap's length; in an overlap, the earlier offset when the hybrid side was in daylight saving
/// time, else the later one (Spark's choice).
fn local_to_utc(tz: Tz, naive: NaiveDateTime, dst: bool) -> Option<i64> {
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) => Some(t.timestamp()),
        LocalResult::Ambiguous(early, late) => Some(if dst {
            early.timestamp()
        } else {
            late.timestamp()
        }),
        LocalResult::None => {
            // The offset before the gap: that of an instant a day earlier.
            let guess = naive.and_utc().timestamp() - DAY_SECS;
            let at = chrono::DateTime::from_timestamp(guess, 0)?.naive_utc();
            let before = tz.offset_from_utc_datetime(&at).fix().local_minus_utc() as i64;
            Some(naive.and_utc().timestamp() - before)
        }
    }
}

/// A timestamp array (any unit, its zone kept) rebased from the hybrid calendar by its local
/// fields in `zone`, as Spark reads its `LEGACY` values; what is finer than a microsecond is
/// kept.
pub(crate) fn rebase_timestamps(a: &ArrayRef, unit: TimeUnit, zone: Tz) -> ArrayRef {
    let per_sec: i64 = match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let f = move |v: i64| -> i64 {
        if per_sec >= 1_000_000 {
            let k = per_sec / 1_000_000;
            let us = julian_to_gregorian_micros(zone, v.div_euclid(k));
            us.saturating_mul(k).saturating_add(v.rem_euclid(k))
        } else {
            let k = 1_000_000 / per_sec;
            julian_to_gregorian_micros(zone, v.saturating_mul(k)).div_euclid(k)
        }
    };
    let tz = match a.data_type() {
        DataType::Timestamp(_, tz) => tz.clone(),
        _ => None,
    };
    macro_rules! map {
        ($t:ty) => {{
            let out: PrimitiveArray<$t> = a.as_primitive::<$t>().unary(f);
            Arc::new(out.with_timezone_opt(tz)) as ArrayRef
        }};
    }
    match unit {
        TimeUnit::Second => map!(TimestampSecondType),
        TimeUnit::Millisecond => map!(TimestampMillisecondType),
        TimeUnit::Microsecond => map!(TimestampMicrosecondType),
        TimeUnit::Nanosecond => map!(TimestampNanosecondType),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> i32 {
        NaiveDate::from_ymd_opt(y, m, d).unwrap().num_days_from_ce() - 719_163
    }

    #[test]
    fn julian_days_keep_their_fields() {
        // Hybrid 1582-10-04 (the day before the cutover) is day -141428: Julian 1582-10-04.
        assert_eq!(julian_to_gregorian_days(-141_428), day(1582, 10, 4));
        assert_eq!(
            julian_to_gregorian_days(GREGORIAN_START_DAY),
            day(1582, 10, 15)
        );
        assert_eq!(julian_to_gregorian_days(0), 0);
        // Julian 1000-01-01 is day -354280 of the hybrid calendar.
        assert_eq!(julian_to_gregorian_days(-354_280), day(1000, 1, 1));
        // Julian 0001-01-01 is Gregorian 0000-12-30: the count moves 2 days.
        assert_eq!(julian_to_gregorian_days(day(1, 1, 1) - 2), day(1, 1, 1));
        // Julian 1500-02-29 (not a Gregorian leap day) becomes 1500-03-01.
        let feb29 = -171_596;
        assert_eq!(julian_fields(feb29 as i64), (1500, 2, 29));
        assert_eq!(julian_to_gregorian_days(feb29), day(1500, 3, 1));
    }

    #[test]
    fn micros_before_1900_take_java_util_offsets() {
        let la: Tz = "America/Los_Angeles".parse().unwrap();
        // 1850-01-01T00:00Z: java.util says -8:00 (no LMT), java.time -7:52:58: 7 min 2 s
        // earlier.
        let t = -3_786_825_600_000_000;
        assert_eq!(julian_to_gregorian_micros(la, t), t - 422_000_000);
        assert_eq!(julian_to_gregorian_micros(Tz::UTC, t), t);
        // Kolkata before 1900: java.util +5:30, java.time +5:21:10 (MMT); from 1900 on both
        // +5:21:10 (until 1906).
        let kolkata: Tz = "Asia/Kolkata".parse().unwrap();
        let t = -2_208_999_600_000_000; // 1899-12-31T21:00Z
        assert_eq!(julian_to_gregorian_micros(kolkata, t), t + 530_000_000);
        let t = -2_208_985_200_000_000; // 1900-01-01T01:00Z
        assert_eq!(julian_to_gregorian_micros(kolkata, t), t);
        // From 1900 on nothing moves.
        assert_eq!(julian_to_gregorian_micros(la, 0), 0);
        // Before the cutover the days move too (10 days in 1582).
        let julian_1582_10_01 = ((-141_431_i64) * DAY_SECS + 12 * 3600) * 1_000_000;
        let want = ((day(1582, 10, 1) as i64) * DAY_SECS + 12 * 3600) * 1_000_000;
        assert_eq!(julian_to_gregorian_micros(Tz::UTC, julian_1582_10_01), want);
    }
}
