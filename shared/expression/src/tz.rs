//! IANA time zones for every crate that computes local times (the sandbox's
//! Intl polyfill, the Date & Time node, conditions, forms, schedules):
//! jiff's compact copy of the tz database behind chrono's `TimeZone` trait.
//!
//! Why not chrono-tz: it compiles every zone's transitions into statics of
//! string slices, about 30,000 pointers the loader relocates at each cold
//! start and some 2 MB of every Lambda binary that can name a zone. jiff
//! embeds the database as one byte string and reads a zone when it is first
//! asked for. The copy is bundled (not `/usr/share/zoneinfo`) so Lambda's
//! `provided.al2023`, this machine and CI give the same answers.

use std::fmt;

use chrono::{DateTime, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone};

/// An IANA zone (`Europe/Berlin`, `UTC`, `Etc/GMT+2`).
#[derive(Clone, PartialEq, Eq)]
pub struct Tz(jiff::tz::TimeZone);

impl Tz {
    /// The zone of an IANA name, matched without regard to case; `None` for
    /// an unknown name.
    pub fn get(name: &str) -> Option<Tz> {
        jiff::tz::TimeZone::get(name.trim()).ok().map(Tz)
    }

    /// The zone of `name`, or UTC when it names none.
    pub fn get_or_utc(name: &str) -> Tz {
        Tz::get(name).unwrap_or_else(Tz::utc)
    }

    pub fn utc() -> Tz {
        Tz(jiff::tz::TimeZone::UTC)
    }

    /// The database's spelling of the zone's name (`europe/berlin` → `Europe/Berlin`).
    pub fn name(&self) -> &str {
        self.0.iana_name().unwrap_or("UTC")
    }

    fn at(&self, ts: jiff::Timestamp) -> TzOffset {
        let info = self.0.to_offset_info(ts);
        TzOffset {
            tz: self.clone(),
            fixed: fixed(info.offset()),
            abbreviation: Abbreviation::new(info.abbreviation()),
        }
    }
}

impl fmt::Debug for Tz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Tz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A zone's offset at an instant; displays as its abbreviation (`CET`,
/// `EDT`, `+03`), which is what chrono's `%Z` writes.
#[derive(Clone, Debug)]
pub struct TzOffset {
    tz: Tz,
    fixed: FixedOffset,
    abbreviation: Abbreviation,
}

impl TzOffset {
    pub fn abbreviation(&self) -> &str {
        self.abbreviation.as_str()
    }
}

impl Offset for TzOffset {
    fn fix(&self) -> FixedOffset {
        self.fixed
    }
}

impl fmt::Display for TzOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.abbreviation())
    }
}

impl TimeZone for Tz {
    type Offset = TzOffset;

    fn from_offset(offset: &TzOffset) -> Tz {
        offset.tz.clone()
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> LocalResult<TzOffset> {
        self.offset_from_local_datetime(&local.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> LocalResult<TzOffset> {
        use jiff::tz::AmbiguousOffset;
        let Some(civil) = civil(local) else { return LocalResult::None };
        let instant = |offset: jiff::tz::Offset| timestamp(&(*local - chrono::Duration::seconds(offset.seconds().into())));
        match self.0.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => LocalResult::Single(self.at(instant(offset))),
            // A wall-clock time skipped by a change (spring forward).
            AmbiguousOffset::Gap { .. } => LocalResult::None,
            // A wall-clock time that happens twice (fall back): earliest instant first.
            AmbiguousOffset::Fold { before, after } => {
                let (a, b) = (instant(before), instant(after));
                let (first, second) = if a <= b { (a, b) } else { (b, a) };
                LocalResult::Ambiguous(self.at(first), self.at(second))
            }
        }
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> TzOffset {
        self.offset_from_utc_datetime(&utc.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> TzOffset {
        self.at(timestamp(utc))
    }
}

/// Offset of `zone` (IANA name, `UTC`, `Etc/GMT±N`) from UTC in minutes at
/// `epoch_ms`; `None` for an unknown zone. (The sandbox's Intl polyfill:
/// QuickJS has no ICU.)
pub fn offset_minutes(zone: &str, epoch_ms: f64) -> Option<f64> {
    let tz = Tz::get(zone)?;
    let ms = if epoch_ms.is_finite() { epoch_ms as i64 } else { 0 };
    let utc = DateTime::from_timestamp_millis(ms)?.naive_utc();
    Some(f64::from(tz.offset_from_utc_datetime(&utc).fix().local_minus_utc()) / 60.0)
}

fn fixed(offset: jiff::tz::Offset) -> FixedOffset {
    FixedOffset::east_opt(offset.seconds()).unwrap_or(FixedOffset::east_opt(0).expect("zero is a valid offset"))
}

/// A UTC wall-clock time as jiff's instant, clamped to jiff's range (years
/// -9999..=9999), beyond which no zone has transitions anyway.
fn timestamp(utc: &NaiveDateTime) -> jiff::Timestamp {
    let t = utc.and_utc();
    let nanos = t.timestamp_subsec_nanos().min(999_999_999) as i32;
    jiff::Timestamp::new(t.timestamp(), nanos).unwrap_or(if t.timestamp() < 0 { jiff::Timestamp::MIN } else { jiff::Timestamp::MAX })
}

fn civil(local: &NaiveDateTime) -> Option<jiff::civil::DateTime> {
    use chrono::{Datelike, Timelike};
    let year = i16::try_from(local.year()).ok()?;
    let nanos = local.nanosecond().min(999_999_999) as i32;
    jiff::civil::DateTime::new(year, local.month() as i8, local.day() as i8, local.hour() as i8, local.minute() as i8, local.second() as i8, nanos).ok()
}

/// A zone abbreviation, kept inline: the database's are 3–6 characters, and
/// an offset is computed for every local time of a run.
#[derive(Clone, Copy)]
struct Abbreviation {
    bytes: [u8; 15],
    len: u8,
}

impl Abbreviation {
    fn new(s: &str) -> Abbreviation {
        let mut end = s.len().min(15);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0; 15];
        bytes[..end].copy_from_slice(&s.as_bytes()[..end]);
        Abbreviation { bytes, len: end as u8 }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl fmt::Debug for Abbreviation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        assert_eq!(offset_minutes("UTC", 0.0), Some(0.0));
        assert_eq!(offset_minutes("Etc/GMT+2", 0.0), Some(-120.0));
        // 2024-07-01: CEST
        assert_eq!(offset_minutes("Europe/Berlin", 1_719_792_000_000.0), Some(120.0));
        assert_eq!(offset_minutes("Asia/Kolkata", 0.0), Some(330.0));
        assert_eq!(offset_minutes("Mars/Base", 0.0), None);
    }

    #[test]
    fn names_match_without_case_and_read_as_the_database_spells_them() {
        assert_eq!(Tz::get("europe/berlin").map(|t| t.name().to_owned()), Some("Europe/Berlin".into()));
        assert_eq!(Tz::get(" America/New_York ").map(|t| t.name().to_owned()), Some("America/New_York".into()));
        assert_eq!(Tz::get_or_utc("nowhere").name(), "UTC");
    }

    #[test]
    fn local_times_resolve_as_chrono_tz_did() {
        let berlin = Tz::get("Europe/Berlin").unwrap();
        let at = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap();
        let winter = berlin.from_local_datetime(&at("2024-03-01 14:05:09")).single().unwrap();
        assert_eq!(winter.to_rfc3339(), "2024-03-01T14:05:09+01:00");
        assert_eq!(winter.format("%Z %:z").to_string(), "CET +01:00");
        let summer = berlin.from_local_datetime(&at("2024-07-01 12:00:00")).single().unwrap();
        assert_eq!(summer.format("%Z").to_string(), "CEST");
        // 02:30 on the last Sunday of March does not exist in Berlin.
        assert!(matches!(berlin.from_local_datetime(&at("2024-03-31 02:30:00")), LocalResult::None));
        // 02:30 on the last Sunday of October happens twice: CEST first, then CET.
        match berlin.from_local_datetime(&at("2024-10-27 02:30:00")) {
            LocalResult::Ambiguous(a, b) => {
                assert_eq!(a.to_rfc3339(), "2024-10-27T02:30:00+02:00");
                assert_eq!(b.to_rfc3339(), "2024-10-27T02:30:00+01:00");
                assert!(a < b);
            }
            other => panic!("expected two instants, got {other:?}"),
        }
        let ny = Tz::get("America/New_York").unwrap();
        let utc = DateTime::from_timestamp(1_704_067_200, 0).unwrap(); // 2024-01-01T00:00Z
        assert_eq!(utc.with_timezone(&ny).format("%Y-%m-%d %H:%M %Z").to_string(), "2023-12-31 19:00 EST");
    }
}
