//! Time zones: the session's TimeZone setting and the zones that AT TIME ZONE, timezone()
//! and timestamptz input name. Named zones come from the IANA database compiled into
//! chrono-tz; fixed offsets are PostgreSQL's numeric and POSIX forms (`-07`, `UTC+3`,
//! `<+05:30>-05:30`). A timestamptz is UTC microseconds since 2000-01-01; the zone only
//! changes how it is read and written, as in PostgreSQL.
//!
//! The session zone lives in a thread-local, as PostgreSQL's `session_timezone` is a
//! backend global: a statement and its output encoding run on the thread of the session
//! that set it (the session installs it before each statement, see `install_session_zone`).

use std::cell::RefCell;
use std::str::FromStr;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone as _};
use chrono_tz::{OffsetName, Tz};

use crate::error::{Result, SqlError};

/// Seconds from the Unix epoch to PostgreSQL's (2000-01-01).
const POSTGRES_EPOCH_UNIX_SECONDS: i64 = 946_684_800;
const MICROSECONDS_PER_SECOND: i64 = 1_000_000;
/// A day in microseconds, the distance at which a transition's earlier offset is read.
const DAY_MICROSECONDS: i64 = 86_400 * MICROSECONDS_PER_SECOND;

/// A time zone: an IANA zone, or a fixed offset east of UTC with the name SHOW prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Zone {
    Named(Tz),
    Fixed { east_seconds: i32, name: String },
}

thread_local! {
    /// The TimeZone setting's text (as SHOW prints it) and its zone.
    static SESSION_ZONE: RefCell<(String, Zone)> = RefCell::new(("UTC".into(), Zone::utc()));
}

/// Makes the zone the setting `name` names (checked by SET) the zone of the statements run
/// on this thread from now on.
pub fn install_session_zone_named(name: &str) {
    SESSION_ZONE.with(|current| {
        if current.borrow().0 == name {
            return;
        }
        let zone = Zone::by_name(name);
        debug_assert!(zone.is_some(), "SET checked the zone {name}");
        *current.borrow_mut() = (name.to_string(), zone.unwrap_or_else(Zone::utc));
    });
}

/// Runs `body` with the session's zone.
pub fn with_session_zone<T>(body: impl FnOnce(&Zone) -> T) -> T {
    SESSION_ZONE.with(|current| body(&current.borrow().1))
}

/// UTC microseconds to the session zone's wall-clock microseconds.
pub fn utc_to_session_local(utc_micros: i64) -> i64 {
    with_session_zone(|zone| zone.utc_to_local(utc_micros))
}

/// Wall-clock microseconds in the session zone to UTC microseconds.
pub fn session_local_to_utc(local_micros: i64) -> i64 {
    with_session_zone(|zone| zone.local_to_utc(local_micros))
}

impl Zone {
    pub fn utc() -> Zone {
        Zone::Fixed { east_seconds: 0, name: "UTC".into() }
    }

    /// The offset east of UTC, in seconds, in effect at a UTC instant.
    pub fn offset_at_utc(&self, utc_micros: i64) -> i32 {
        match self {
            Zone::Fixed { east_seconds, .. } => *east_seconds,
            Zone::Named(tz) => tz
                .offset_from_utc_datetime(&within_listed_years(naive_utc(utc_micros)))
                .fix()
                .local_minus_utc(),
        }
    }

    /// The abbreviation in effect at a UTC instant (`EST`, or `-03` where the database
    /// has no letters for it).
    pub fn abbreviation_at_utc(&self, utc_micros: i64) -> String {
        match self {
            // A POSIX zone's is its STD name: `<-07>` or the letters of `UTC+3`.
            Zone::Fixed { name, .. } => match name.strip_prefix('<') {
                Some(quoted) => quoted.split('>').next().unwrap_or("").to_string(),
                None => name.chars().take_while(char::is_ascii_alphabetic).collect(),
            },
            Zone::Named(tz) => {
                let offset =
                    tz.offset_from_utc_datetime(&within_listed_years(naive_utc(utc_micros)));
                match offset.abbreviation() {
                    Some(name) => name.to_string(),
                    None => format_offset(offset.fix().local_minus_utc(), false),
                }
            }
        }
    }

    pub fn utc_to_local(&self, utc_micros: i64) -> i64 {
        let offset = i64::from(self.offset_at_utc(utc_micros)) * MICROSECONDS_PER_SECOND;
        utc_micros.saturating_add(offset)
    }

    /// Wall-clock time to UTC as PostgreSQL's DetermineTimeZoneOffset resolves it: a time
    /// in a spring-forward gap takes the offset from before the transition, a time a
    /// fall-back repeats takes the offset from after it.
    pub fn local_to_utc(&self, local_micros: i64) -> i64 {
        let Zone::Named(tz) = self else {
            return local_micros
                .saturating_sub(i64::from(self.offset_at_utc(0)) * MICROSECONDS_PER_SECOND);
        };
        let naive = within_listed_years(naive_utc(local_micros));
        let offset_seconds = match tz.offset_from_local_datetime(&naive) {
            chrono::LocalResult::Single(offset) => offset.fix().local_minus_utc(),
            chrono::LocalResult::Ambiguous(_, later) => later.fix().local_minus_utc(),
            // In a gap: the offset in effect a day before (transitions are farther apart).
            chrono::LocalResult::None => {
                self.offset_at_utc(local_micros.saturating_sub(DAY_MICROSECONDS))
            }
        };
        local_micros.saturating_sub(i64::from(offset_seconds) * MICROSECONDS_PER_SECOND)
    }

    /// The name SHOW TimeZone prints.
    pub fn setting_name(&self) -> String {
        match self {
            Zone::Named(tz) => tz.name().to_string(),
            Zone::Fixed { name, .. } => name.clone(),
        }
    }

    /// A zone by the name PostgreSQL's pg_tzset takes: an IANA name (any case), or a POSIX
    /// `STD offset` without daylight-saving rules (`UTC+3` is three hours west, `+05:30`
    /// five and a half west). None for a name that is neither.
    pub fn by_name(name: &str) -> Option<Zone> {
        if let Some(tz) = named_zone(name) {
            return Some(Zone::Named(tz));
        }
        let west_seconds = posix_offset_west_seconds(name)?;
        Some(Zone::Fixed { east_seconds: -west_seconds, name: name.to_string() })
    }

    /// A fixed zone from an ISO offset east of UTC (`SET TIME ZONE -7`, `INTERVAL '+02:30'`),
    /// named as PostgreSQL's pg_tzset_offset names it: `<-07>+07`.
    pub fn of_iso_offset(east_seconds: i32) -> Zone {
        let name = format!(
            "<{}>{}",
            format_offset(east_seconds, false),
            format_offset(-east_seconds, false)
        );
        Zone::Fixed { east_seconds, name }
    }
}

/// An IANA zone by name, case-insensitively (PostgreSQL finds zone files so).
fn named_zone(name: &str) -> Option<Tz> {
    if let Ok(tz) = Tz::from_str(name) {
        return Some(tz);
    }
    chrono_tz::TZ_VARIANTS.iter().copied().find(|tz| tz.name().eq_ignore_ascii_case(name))
}

/// A POSIX zone `STD offset` with no DST part: STD is three or more letters or `<...>`
/// (or absent, as PostgreSQL takes `+05:30`); the offset is hours west of UTC.
fn posix_offset_west_seconds(name: &str) -> Option<i32> {
    let rest = if let Some(quoted) = name.strip_prefix('<') {
        let end = quoted.find('>')?;
        &quoted[end + 1..]
    } else {
        let letters = name.chars().take_while(char::is_ascii_alphabetic).count();
        if letters != 0 && letters < 3 {
            return None;
        }
        &name[letters..]
    };
    if rest.is_empty() {
        return None;
    }
    parse_offset_seconds(rest).filter(|seconds| seconds.abs() <= 24 * 3600)
}

/// `[+-]hh[:mm[:ss]]` as signed seconds; None for anything else.
pub fn parse_offset_seconds(text: &str) -> Option<i32> {
    let (sign, digits) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => (1, text),
    };
    let mut parts = digits.split(':');
    let mut total = 0i32;
    for (index, scale) in [3600, 60, 1].into_iter().enumerate() {
        let Some(part) = parts.next() else { break };
        let maximum = if index == 0 { 167 } else { 59 };
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        let value: i32 = part.parse().ok()?;
        if value > maximum {
            return None;
        }
        total += value * scale;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(sign * total)
}

/// An offset as PostgreSQL writes it after a timestamptz: `+05`, `-04:56:02`, `+05:30`;
/// with `colon_minutes`, the minutes always (to_char's TZH:TZM is separate).
pub fn format_offset(east_seconds: i32, always_minutes: bool) -> String {
    let sign = if east_seconds < 0 { '-' } else { '+' };
    let magnitude = east_seconds.unsigned_abs();
    let (hours, minutes, seconds) = (magnitude / 3600, magnitude / 60 % 60, magnitude % 60);
    let mut text = format!("{sign}{hours:02}");
    if minutes != 0 || seconds != 0 || always_minutes {
        text.push_str(&format!(":{minutes:02}"));
    }
    if seconds != 0 {
        text.push_str(&format!(":{seconds:02}"));
    }
    text
}

/// Microseconds since 2000-01-01 as a naive date-time, clamped to chrono's range (the
/// offset of a zone at the ends of time is its first or last).
fn naive_utc(micros: i64) -> NaiveDateTime {
    let seconds =
        micros.div_euclid(MICROSECONDS_PER_SECOND).saturating_add(POSTGRES_EPOCH_UNIX_SECONDS);
    let clamped = seconds
        .clamp(NaiveDateTime::MIN.and_utc().timestamp(), NaiveDateTime::MAX.and_utc().timestamp());
    DateTime::from_timestamp(clamped, 0).expect("clamped to chrono's range").naive_utc()
}

/// The last year whose transitions chrono-tz lists; after it, it keeps a zone's last offset.
const LISTED_TRANSITIONS_END_YEAR: i32 = 2099;
/// Years in which every calendar (leap or not, and each weekday of January 1) occurs.
const CALENDAR_CYCLE_YEARS: i32 = 28;

/// `naive` moved, for a year after `LISTED_TRANSITIONS_END_YEAR`, to the year of the 28
/// before it with the same calendar: leap or not, and January 1 on the same weekday.
/// PostgreSQL applies a zone's rule (its tzdata's POSIX footer: "the second Sunday of March
/// at 02:00") for ever, where chrono-tz stops at 2099 and keeps the last offset (standard
/// time all year after it). A rule falls on the same dates in years of the same calendar, so
/// the offset read in the equivalent year is the rule's. Earlier years are unchanged.
fn within_listed_years(naive: NaiveDateTime) -> NaiveDateTime {
    let year = naive.year();
    if year <= LISTED_TRANSITIONS_END_YEAR {
        return naive;
    }
    let calendar = |year: i32| {
        let january_first = NaiveDate::from_ymd_opt(year, 1, 1).map(|date| date.weekday());
        (NaiveDate::from_ymd_opt(year, 2, 29).is_some(), january_first)
    };
    let wanted = calendar(year);
    let first = LISTED_TRANSITIONS_END_YEAR - CALENDAR_CYCLE_YEARS + 1;
    let equivalent = (first..=LISTED_TRANSITIONS_END_YEAR)
        .find(|candidate| calendar(*candidate) == wanted)
        .expect("every calendar occurs in 28 consecutive years without a skipped leap day");
    let moved = naive.with_year(equivalent).expect("the same calendar has the same days");
    debug_assert_eq!(moved.ordinal(), naive.ordinal());
    moved
}

/// The 22023 PostgreSQL gives an unknown TimeZone setting.
pub fn invalid_time_zone_setting(value: &str) -> SqlError {
    SqlError::new("22023", format!("invalid value for parameter \"TimeZone\": \"{value}\""))
}

/// The 22023 PostgreSQL gives an unknown zone in AT TIME ZONE, timezone() and date_trunc.
pub fn zone_not_recognized(name: &str) -> SqlError {
    SqlError::new("22023", format!("time zone \"{name}\" not recognized"))
}

/// The zone AT TIME ZONE / timezone(text, ...) names: an abbreviation first (`EST`, `PDT`),
/// then a zone name or POSIX form, as PostgreSQL's DecodeTimezoneName.
pub fn zone_of_text(name: &str) -> Result<Zone> {
    if let Some(east_seconds) = abbreviation_offset_seconds(name) {
        return Ok(Zone::Fixed { east_seconds, name: name.to_string() });
    }
    Zone::by_name(name).ok_or_else(|| zone_not_recognized(name))
}

/// The fixed-offset abbreviations of PostgreSQL's `Default` abbreviation set that tierdb
/// knows (east of UTC, seconds); datetime input and AT TIME ZONE read them.
pub fn abbreviation_offset_seconds(name: &str) -> Option<i32> {
    const HOUR: i32 = 3600;
    Some(match name.to_ascii_uppercase().as_str() {
        "UTC" | "UT" | "GMT" | "Z" | "ZULU" | "UCT" => 0,
        "EST" => -5 * HOUR,
        "EDT" => -4 * HOUR,
        "CST" => -6 * HOUR,
        "CDT" => -5 * HOUR,
        "MST" => -7 * HOUR,
        "MDT" => -6 * HOUR,
        "PST" => -8 * HOUR,
        "PDT" => -7 * HOUR,
        "AKST" => -9 * HOUR,
        "AKDT" => -8 * HOUR,
        "HST" => -10 * HOUR,
        "BST" | "CET" | "MET" => HOUR,
        "CEST" | "MEST" | "EET" => 2 * HOUR,
        "EEST" | "MSK" => 3 * HOUR,
        "WET" => 0,
        "WEST" => HOUR,
        "IST" => 2 * HOUR,
        "JST" | "KST" => 9 * HOUR,
        "AEST" => 10 * HOUR,
        "AEDT" => 11 * HOUR,
        "ACST" => 9 * HOUR + 1800,
        "AWST" => 8 * HOUR,
        "NZST" => 12 * HOUR,
        "NZDT" => 13 * HOUR,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_MICROSECONDS: i64 = 3_600_000_000;

    fn micros_of(text: &str) -> i64 {
        crate::types::parse_timestamp(text, false).expect("a timestamp")
    }

    #[test]
    fn new_york_resolves_gaps_and_overlaps_as_postgres() {
        let zone = Zone::by_name("america/new_york").expect("known");
        assert_eq!(zone.setting_name(), "America/New_York");
        // 02:30 on 2024-03-10 does not exist: read with EST, 07:30 UTC.
        let gap = zone.local_to_utc(micros_of("2024-03-10 02:30:00"));
        assert_eq!(gap, micros_of("2024-03-10 07:30:00"));
        // 01:30 on 2024-11-03 happens twice: the later (EST) one, 06:30 UTC.
        let overlap = zone.local_to_utc(micros_of("2024-11-03 01:30:00"));
        assert_eq!(overlap, micros_of("2024-11-03 06:30:00"));
        assert_eq!(zone.offset_at_utc(overlap), -5 * 3600);
        assert_eq!(zone.offset_at_utc(overlap - HOUR_MICROSECONDS), -4 * 3600);
    }

    #[test]
    fn rules_apply_after_2099_as_postgres_applies_them() {
        let new_york = Zone::by_name("America/New_York").expect("a zone");
        // PostgreSQL: '2150-07-01 12:00'::timestamptz is 12:00-04, January's -05; 2150's
        // spring-forward is the second Sunday of March (the 8th).
        let summer = micros_of("2150-07-01 16:00:00");
        assert_eq!(new_york.offset_at_utc(summer), -4 * 3600);
        assert_eq!(new_york.abbreviation_at_utc(summer), "EDT");
        assert_eq!(new_york.offset_at_utc(micros_of("2150-01-15 17:00:00")), -5 * 3600);
        assert_eq!(new_york.offset_at_utc(micros_of("2150-03-08 06:59:59")), -5 * 3600);
        assert_eq!(new_york.offset_at_utc(micros_of("2150-03-08 07:00:00")), -4 * 3600);
        assert_eq!(
            new_york.local_to_utc(micros_of("2150-07-01 12:00:00")),
            summer,
            "wall-clock input reads the rule too"
        );
        // Southern hemisphere: summer in January.
        let sydney = Zone::by_name("Australia/Sydney").expect("a zone");
        assert_eq!(sydney.offset_at_utc(micros_of("2300-01-15 00:00:00")), 11 * 3600);
        assert_eq!(sydney.offset_at_utc(micros_of("2300-07-15 00:00:00")), 10 * 3600);
    }

    #[test]
    fn offsets_are_written_as_postgres_writes_them() {
        assert_eq!(format_offset(-5 * 3600, false), "-05");
        assert_eq!(format_offset(19_800, false), "+05:30");
        assert_eq!(format_offset(-17_762, false), "-04:56:02");
        assert_eq!(format_offset(0, true), "+00:00");
        assert_eq!(Zone::of_iso_offset(-7 * 3600).setting_name(), "<-07>+07");
        assert_eq!(Zone::by_name("UTC+3").map(|zone| zone.offset_at_utc(0)), Some(-3 * 3600));
        assert_eq!(Zone::by_name("+05:30").map(|zone| zone.offset_at_utc(0)), Some(-19_800));
        assert_eq!(Zone::by_name("Mars/Olympus"), None);
        assert_eq!(Zone::by_name("Z"), None);
    }
}
