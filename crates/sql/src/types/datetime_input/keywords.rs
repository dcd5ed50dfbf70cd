//! The words date/time input knows (PostgreSQL's datetktbl), and the zone abbreviations it
//! reads before them.

/// What a word means in date/time input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keyword {
    Special(Special),
    Month(i32),
    DayOfWeek,
    Meridiem(Meridiem),
    /// AD (false) or BC (true).
    Era(bool),
    /// A label before a number: `j2451187`, `y2001m02d04`, `t134500`.
    Unit(Unit),
    /// ISO 8601's `T` between the date and the time.
    IsoTime,
    /// `DST` after a standard-time zone abbreviation: an hour later.
    DaylightModifier,
    /// `at` and `on`, read and dropped.
    Ignored,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Special {
    Early,
    Late,
    Epoch,
    Now,
    Today,
    Tomorrow,
    Yesterday,
    /// `allballs`: 00:00:00 UTC.
    Zulu,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Meridiem {
    Am,
    Pm,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unit {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Julian,
    /// The number after `t` is a run-together time (`t134500`).
    Time,
    /// dow, doy, isodow, isoyear: labels PostgreSQL knows but rejects before a number.
    Other,
}

/// PostgreSQL's TOKMAXLEN: words are compared on their first ten characters.
const TOKEN_LENGTH_MAX: usize = 10;

/// The keyword a lowered word is, if any.
pub(super) fn keyword(word: &str) -> Option<Keyword> {
    let key = word.get(..TOKEN_LENGTH_MAX).unwrap_or(word);
    if let Some(month) = month_number(key) {
        return Some(Keyword::Month(month));
    }
    Some(match key {
        "-infinity" => Keyword::Special(Special::Early),
        "infinity" => Keyword::Special(Special::Late),
        "epoch" => Keyword::Special(Special::Epoch),
        "now" => Keyword::Special(Special::Now),
        "today" => Keyword::Special(Special::Today),
        "tomorrow" => Keyword::Special(Special::Tomorrow),
        "yesterday" => Keyword::Special(Special::Yesterday),
        "allballs" => Keyword::Special(Special::Zulu),
        "ad" => Keyword::Era(false),
        "bc" => Keyword::Era(true),
        "am" => Keyword::Meridiem(Meridiem::Am),
        "pm" => Keyword::Meridiem(Meridiem::Pm),
        "at" | "on" => Keyword::Ignored,
        "dst" => Keyword::DaylightModifier,
        "t" => Keyword::IsoTime,
        "sun" | "sunday" | "mon" | "monday" | "tue" | "tues" | "tuesday" | "wed" | "weds"
        | "wednesday" | "thu" | "thur" | "thurs" | "thursday" | "fri" | "friday" | "sat"
        | "saturday" => Keyword::DayOfWeek,
        _ => Keyword::Unit(unit(key)?),
    })
}

fn month_number(key: &str) -> Option<i32> {
    Some(match key {
        "jan" | "january" => 1,
        "feb" | "february" => 2,
        "mar" | "march" => 3,
        "apr" | "april" => 4,
        "may" => 5,
        "jun" | "june" => 6,
        "jul" | "july" => 7,
        "aug" | "august" => 8,
        "sep" | "sept" | "september" => 9,
        "oct" | "october" => 10,
        "nov" | "november" => 11,
        "dec" | "december" => 12,
        _ => return None,
    })
}

fn unit(key: &str) -> Option<Unit> {
    Some(match key {
        "y" => Unit::Year,
        "m" => Unit::Month,
        "d" => Unit::Day,
        "h" => Unit::Hour,
        "mm" => Unit::Minute,
        "s" => Unit::Second,
        "j" | "jd" | "julian" => Unit::Julian,
        "dow" | "doy" | "isodow" | "isoyear" => Unit::Other,
        _ => return None,
    })
}

/// A zone abbreviation of PostgreSQL's Default set that tierdb knows: its offset east of
/// UTC in seconds and whether it names daylight-saving time (which `DST` cannot follow).
pub(super) fn zone_abbreviation(word: &str) -> Option<(i32, bool)> {
    let east_seconds = crate::types::abbreviation_offset_seconds(word)?;
    const DAYLIGHT: [&str; 12] =
        ["EDT", "CDT", "MDT", "PDT", "AKDT", "CEST", "MEST", "EEST", "WEST", "BST", "AEDT", "NZDT"];
    let daylight = DAYLIGHT.contains(&word.to_ascii_uppercase().as_str());
    Some((east_seconds, daylight))
}
