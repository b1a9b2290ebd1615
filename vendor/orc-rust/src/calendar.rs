// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

//! Dates and timestamps of files that declare the hybrid Julian/Gregorian calendar.
//!
//! The Java writer (`java.sql.Date`/`Timestamp`, `GregorianCalendar`) counts days before
//! 1582-10-15 in the Julian calendar and says so in the footer (`CalendarKind::JulianGregorian`).
//! Arrow counts days in the proleptic Gregorian calendar. Reading such a file as the Java reader
//! does with `orc.proleptic.gregorian=true` (and as Spark does) keeps the calendar fields:
//! Julian 1500-03-01 becomes proleptic 1500-03-01, ten days later as a day count.

/// Days from 1970-01-01 to 1582-10-15, the first Gregorian day; the same count in both
/// calendars, which agree from that day on.
pub const GREGORIAN_START_DAY: i64 = -141_427;

/// Days since 1970-01-01 of the proleptic Gregorian date `y-m-d` (astronomical years).
fn proleptic_days(y: i64, m: i64, d: i64) -> i64 {
    // H. Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The Julian calendar date (astronomical year, month, day) of a day count since 1970-01-01.
fn julian_ymd(days: i64) -> (i64, i64, i64) {
    // The Julian day number, then E. G. Richards' algorithm for the Julian calendar.
    let c = days + 2_440_588 + 32_082;
    let d = (4 * c + 3).div_euclid(1461);
    let e = c - (1461 * d).div_euclid(4);
    let m = (5 * e + 2).div_euclid(153);
    let day = e - (153 * m + 2).div_euclid(5) + 1;
    let month = m + 3 - 12 * (m / 10);
    let year = d - 4800 + m / 10;
    (year, month, day)
}

/// The proleptic Gregorian day count of the hybrid calendar's day `days`: the same year,
/// month and day. A Julian 29 February of a year that is not a Gregorian leap year becomes
/// 1 March, as in Spark's `RebaseDateTime.rebaseJulianToGregorianDays`.
pub fn hybrid_to_proleptic_days(days: i64) -> i64 {
    if days >= GREGORIAN_START_DAY {
        return days;
    }
    let (y, m, d) = julian_ymd(days);
    proleptic_days(y, m, 1) + d - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(proleptic_days(1970, 1, 1), 0);
        assert_eq!(proleptic_days(1582, 10, 15), GREGORIAN_START_DAY);
        assert_eq!(julian_ymd(GREGORIAN_START_DAY - 1), (1582, 10, 4));
        assert_eq!(julian_ymd(GREGORIAN_START_DAY), (1582, 10, 5));
        // Julian 1582-10-04 is proleptic 1582-10-04: ten days earlier than the day count.
        assert_eq!(
            hybrid_to_proleptic_days(GREGORIAN_START_DAY - 1),
            proleptic_days(1582, 10, 4)
        );
        assert_eq!(hybrid_to_proleptic_days(0), 0);
        // Julian 0001-01-01 is proleptic 0000-12-30.
        let j1 = proleptic_days(0, 12, 30);
        assert_eq!(julian_ymd(j1), (1, 1, 1));
        assert_eq!(hybrid_to_proleptic_days(j1), proleptic_days(1, 1, 1));
        // Julian 1500-02-29 (no Gregorian leap day) becomes 1500-03-01.
        let feb29 = proleptic_days(1500, 3, 1) + 10 - 1;
        assert_eq!(julian_ymd(feb29), (1500, 2, 29));
        assert_eq!(hybrid_to_proleptic_days(feb29), proleptic_days(1500, 3, 1));
    }
}
