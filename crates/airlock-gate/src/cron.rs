//! Five-field cron schedules (`minute hour day-of-month month day-of-week`) read in an
//! IANA time zone.
//!
//! Each field is `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a list of those
//! separated by commas. Day-of-week runs 0–7 with both 0 and 7 for Sunday. As in classic
//! cron, when both day fields are restricted a day matches if either does. Month and day
//! names are not accepted (numbers only), so a schedule reads the same everywhere.
//!
//! Times are wall-clock times of the zone: a time skipped by a daylight-saving jump does
//! not occur that day, and a repeated time fires once (at its first occurrence).

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    days_restricted: bool,
    weekdays_restricted: bool,
}

/// The longest a search for the next time may look ahead (a schedule such as
/// `0 0 31 2 *` never fires).
const HORIZON_DAYS: i64 = 4 * 366;

impl Schedule {
    pub fn parse(expression: &str) -> Result<Schedule, String> {
        let fields: Vec<&str> = expression.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields.as_slice() else {
            return Err(format!(
                "cron `{expression}` must have five fields: minute hour day-of-month month day-of-week"
            ));
        };
        let mut weekdays = field(weekday, 0, 7, "day-of-week")?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1;
        }
        Ok(Schedule {
            minutes: field(minute, 0, 59, "minute")?,
            hours: field(hour, 0, 23, "hour")?,
            days: field(day, 1, 31, "day-of-month")?,
            months: field(month, 1, 12, "month")?,
            weekdays,
            days_restricted: *day != "*",
            weekdays_restricted: *weekday != "*",
        })
    }

    /// The first time strictly after `after` that the schedule fires in `zone`, or `None`
    /// when it never fires within four years.
    pub fn next_after(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        let local = after.to_zoned(zone.clone()).datetime();
        // Start at the next whole minute.
        let mut at = local
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let limit = local.checked_add(HORIZON_DAYS.days()).ok()?;
        while at <= limit {
            if !self.day_matches(at) {
                at = next_day(at)?;
                continue;
            }
            if !bit(self.hours, at.hour()) {
                at = next_hour(at)?;
                continue;
            }
            if !bit(self.minutes, at.minute()) {
                at = at.checked_add(1.minute()).ok()?;
                continue;
            }
            // A wall time inside a daylight-saving gap does not exist: skip it.
            if let Ok(zoned) = zone.to_ambiguous_zoned(at).compatible() {
                if zoned.datetime() == at && zoned.timestamp() > after {
                    return Some(zoned.timestamp());
                }
            }
            at = at.checked_add(1.minute()).ok()?;
        }
        None
    }

    fn day_matches(&self, at: DateTime) -> bool {
        if !bit(self.months, at.month()) {
            return false;
        }
        let day = bit(self.days, at.day());
        let weekday = bit(self.weekdays, at.weekday().to_sunday_zero_offset());
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => day || weekday,
            (true, false) => day,
            (false, true) => weekday,
            (false, false) => true,
        }
    }
}

fn bit(set: u64, value: impl Into<i64>) -> bool {
    let value = value.into();
    (0..64).contains(&value) && set & (1u64 << value) != 0
}

fn next_day(at: DateTime) -> Option<DateTime> {
    at.date()
        .tomorrow()
        .ok()
        .map(|date| date.to_datetime(jiff::civil::time(0, 0, 0, 0)))
}

fn next_hour(at: DateTime) -> Option<DateTime> {
    at.with().minute(0).build().ok()?.checked_add(1.hour()).ok()
}

/// One field as a bit set of the values it allows.
fn field(text: &str, min: u32, max: u32, name: &str) -> Result<u64, String> {
    let mut set = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|step| *step > 0)
                    .ok_or_else(|| format!("{name}: bad step in `{part}`"))?;
                (range, step)
            }
            None => (part, 1),
        };
        let (start, end) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (number(a, min, max, name)?, number(b, min, max, name)?)
        } else {
            let value = number(range, min, max, name)?;
            // `5/15` means from 5 to the end in steps of 15.
            (value, if part.contains('/') { max } else { value })
        };
        if start > end {
            return Err(format!("{name}: range `{range}` runs backwards"));
        }
        let mut value = start;
        while value <= end {
            set |= 1u64 << value;
            value += step;
        }
    }
    Ok(set)
}

fn number(text: &str, min: u32, max: u32, name: &str) -> Result<u32, String> {
    text.parse::<u32>()
        .ok()
        .filter(|value| (min..=max).contains(value))
        .ok_or_else(|| format!("{name}: `{text}` is not a number from {min} to {max}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn next(expression: &str, after: &str, zone: &str) -> Option<String> {
        let zone = TimeZone::get(zone).unwrap();
        Schedule::parse(expression)
            .unwrap()
            .next_after(after.parse().unwrap(), &zone)
            .map(|at| at.to_string())
    }

    #[test]
    fn next_times() {
        let table = [
            (
                "* * * * *",
                "2026-01-01T00:00:30Z",
                "UTC",
                Some("2026-01-01T00:01:00Z"),
            ),
            (
                "*/15 * * * *",
                "2026-01-01T00:01:00Z",
                "UTC",
                Some("2026-01-01T00:15:00Z"),
            ),
            (
                "0 3 * * *",
                "2026-01-01T03:00:00Z",
                "UTC",
                Some("2026-01-02T03:00:00Z"),
            ),
            (
                "0 3 * * *",
                "2026-01-01T01:00:00Z",
                "Europe/Paris",
                Some("2026-01-01T02:00:00Z"),
            ),
            (
                "30 9 * * 1-5",
                "2026-01-02T10:00:00Z",
                "UTC",
                Some("2026-01-05T09:30:00Z"),
            ),
            (
                "0 0 1 * *",
                "2026-01-15T00:00:00Z",
                "UTC",
                Some("2026-02-01T00:00:00Z"),
            ),
            (
                "0 12 * * 7",
                "2026-01-01T00:00:00Z",
                "UTC",
                Some("2026-01-04T12:00:00Z"),
            ),
            // Either day field matches when both are restricted.
            (
                "0 0 13 * 5",
                "2026-02-01T00:00:00Z",
                "UTC",
                Some("2026-02-06T00:00:00Z"),
            ),
            // 02:30 does not exist in Paris on 2026-03-29: that day is skipped.
            (
                "30 2 * * *",
                "2026-03-28T02:00:00Z",
                "Europe/Paris",
                Some("2026-03-30T00:30:00Z"),
            ),
            ("0 0 31 2 *", "2026-01-01T00:00:00Z", "UTC", None),
            (
                "5,10-12 * * * *",
                "2026-01-01T00:10:30Z",
                "UTC",
                Some("2026-01-01T00:11:00Z"),
            ),
        ];
        for (expression, after, zone, expected) in table {
            assert_eq!(
                next(expression, after, zone).as_deref(),
                expected,
                "{expression} after {after} in {zone}"
            );
        }
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        let table = [
            ("* * * *", "five fields"),
            ("60 * * * *", "minute"),
            ("* 24 * * *", "hour"),
            ("* * 0 * *", "day-of-month"),
            ("* * * 13 *", "month"),
            ("* * * * 8", "day-of-week"),
            ("*/0 * * * *", "bad step"),
            ("5-1 * * * *", "backwards"),
            ("* * * JAN *", "month"),
        ];
        for (expression, expected) in table {
            let error = Schedule::parse(expression).unwrap_err();
            assert!(error.contains(expected), "{expression}: {error}");
        }
    }
}
