//! Time zone offsets for the sandbox's Intl polyfill (QuickJS has no ICU).

use chrono::{DateTime, Offset, TimeZone};

/// Offset of `zone` (IANA name, `UTC`, `Etc/GMT±N`) from UTC in minutes at
/// `epoch_ms`; `None` for an unknown zone.
pub fn offset_minutes(zone: &str, epoch_ms: f64) -> Option<f64> {
    let tz: chrono_tz::Tz = zone.parse().ok()?;
    let ms = if epoch_ms.is_finite() { epoch_ms as i64 } else { 0 };
    let utc = DateTime::from_timestamp_millis(ms)?.naive_utc();
    let off = tz.offset_from_utc_datetime(&utc).fix().local_minus_utc();
    Some(off as f64 / 60.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn offsets() {
        assert_eq!(super::offset_minutes("UTC", 0.0), Some(0.0));
        assert_eq!(super::offset_minutes("Etc/GMT+2", 0.0), Some(-120.0));
        // 2024-07-01: CEST
        assert_eq!(super::offset_minutes("Europe/Berlin", 1_719_792_000_000.0), Some(120.0));
        assert_eq!(super::offset_minutes("Mars/Base", 0.0), None);
    }
}
