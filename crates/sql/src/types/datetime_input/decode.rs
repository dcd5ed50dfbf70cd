//! DecodeDateTime and DecodeTimeOnly: the fields of date/time input read one by one into
//! a date, a time and a zone, each field's meaning depending on those before it.

use super::fields::*;
use super::keywords::{keyword, zone_abbreviation, Keyword, Meridiem, Special, Unit};
use super::lexer::{Field, FieldKind};
use super::DateError;
use crate::types::Zone;

/// What the input names (PostgreSQL's dtype).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// A date and time in `tm`.
    Date,
    Epoch,
    /// infinity
    Late,
    /// -infinity
    Early,
}

/// The zone the input's wall-clock time is in.
#[derive(Clone, Debug)]
pub(super) enum ZoneChoice {
    Session,
    OffsetEast(i32),
    Named(Zone),
}

#[derive(Debug)]
pub(super) struct Decoded {
    pub outcome: Outcome,
    pub tm: Tm,
    pub zone: ZoneChoice,
}

/// The clock a `now`, `today` or `yesterday` reads: the statement's time as wall-clock
/// microseconds in the session zone, and the zone's offset east then.
pub(super) struct Clock {
    pub local_micros: i64,
    pub offset_east_seconds: i32,
}

struct Decoder<'a> {
    fields: &'a [Field],
    clock: &'a dyn Fn() -> Clock,
    seen: Mask,
    prefix: Option<Unit>,
    meridiem: Option<Meridiem>,
    numbers: NumberState,
    julian: bool,
    before_christ: bool,
    named_zone: Option<Zone>,
    zone_east: i32,
    outcome: Outcome,
    tm: Tm,
}

/// DecodeDateTime: a date with an optional time and zone, or a special word.
pub(super) fn decode_date_time(
    fields: &[Field],
    clock: &dyn Fn() -> Clock,
) -> Result<Decoded, DateError> {
    let mut decoder = Decoder::new(fields, clock);
    for (index, field) in fields.iter().enumerate() {
        let found = match field.kind {
            FieldKind::Date => decoder.date_field(index)?,
            FieldKind::Time => decoder.time_field(index)?,
            FieldKind::Zone => decoder.zone_field(index)?,
            FieldKind::Number => decoder.number_field(index)?,
            FieldKind::Word | FieldKind::Signed => match decoder.word_field(index, false)? {
                Some(found) => found,
                None => continue,
            },
        };
        decoder.add(found)?;
    }
    decoder.finish_date_time()
}

/// DecodeTimeOnly: a time with an optional zone, after an optional date.
pub(super) fn decode_time_only(
    fields: &[Field],
    clock: &dyn Fn() -> Clock,
) -> Result<Tm, DateError> {
    let mut decoder = Decoder::new(fields, clock);
    for (index, field) in fields.iter().enumerate() {
        let found = match field.kind {
            FieldKind::Date => decoder.time_date_field(index)?,
            FieldKind::Time => decode_time(&field.text, &mut decoder.tm)?,
            FieldKind::Zone => decoder.zone_field(index)?,
            FieldKind::Number => decoder.time_number_field(index)?,
            FieldKind::Word | FieldKind::Signed => match decoder.word_field(index, true)? {
                Some(found) => found,
                None => continue,
            },
        };
        decoder.add(found)?;
    }
    decoder.finish_time_only()
}

impl<'a> Decoder<'a> {
    fn new(fields: &'a [Field], clock: &'a dyn Fn() -> Clock) -> Decoder<'a> {
        Decoder {
            fields,
            clock,
            seen: 0,
            prefix: None,
            meridiem: None,
            numbers: NumberState { have_text_month: false, two_digit_year: false },
            julian: false,
            before_christ: false,
            named_zone: None,
            zone_east: 0,
            outcome: Outcome::Date,
            tm: Tm::default(),
        }
    }

    fn text(&self, index: usize) -> &'a str {
        &self.fields[index].text
    }

    /// A field's mask joins those seen; a field seen twice is an error.
    fn add(&mut self, found: Mask) -> Result<(), DateError> {
        if found & self.seen != 0 {
            return Err(DateError::BadFormat);
        }
        self.seen |= found;
        Ok(())
    }

    /// A date field: a date (`2024-02-29`), or after a month and day a zone name
    /// (`america/new_york`) or a run-together time with an offset (`134500-08`), or a
    /// Julian day with an offset after `j`.
    fn date_field(&mut self, index: usize) -> Result<Mask, DateError> {
        let text = self.text(index);
        if self.prefix == Some(Unit::Julian) {
            self.prefix = None;
            let (day, rest) = c_integer(text)?;
            if day < 0 {
                return Err(DateError::FieldOverflow);
            }
            self.tm.set_julian_day(i64::from(day))?;
            self.julian = true;
            self.zone_east = decode_zone_offset(rest)?;
            return Ok(DATE_FIELDS | TIME_FIELDS | ZONE);
        }
        let month_and_day = self.seen & (MONTH | DAY) == MONTH | DAY;
        if self.prefix.is_none() && !month_and_day {
            return decode_date(text, self.seen, &mut self.numbers, &mut self.tm);
        }
        if text.as_bytes()[0].is_ascii_digit() || self.prefix.is_some() {
            return self.time_with_offset(text, self.seen);
        }
        self.named_zone_field(text)
    }

    /// `hhmmss-zz`: a run-together time and a numeric zone in one field.
    fn time_with_offset(&mut self, text: &str, seen: Mask) -> Result<Mask, DateError> {
        if self.prefix.take().is_some_and(|unit| unit != Unit::Time) {
            return Err(DateError::BadFormat);
        }
        if self.seen & TIME_FIELDS == TIME_FIELDS {
            return Err(DateError::BadFormat);
        }
        let dash = text.find('-').ok_or(DateError::BadFormat)?;
        self.zone_east = decode_zone_offset(&text[dash..])?;
        let found = decode_number_field(&text[..dash], seen, &mut self.numbers, &mut self.tm)?;
        Ok(found | ZONE)
    }

    fn named_zone_field(&mut self, text: &str) -> Result<Mask, DateError> {
        let zone = Zone::by_name(text).ok_or_else(|| DateError::ZoneNotRecognized(text.into()))?;
        self.named_zone = Some(zone);
        Ok(ZONE)
    }

    fn time_field(&mut self, index: usize) -> Result<Mask, DateError> {
        if self.prefix.take().is_some_and(|unit| unit != Unit::Time) {
            return Err(DateError::BadFormat);
        }
        let found = decode_time(self.text(index), &mut self.tm)?;
        if time_overflows(&self.tm) {
            return Err(DateError::FieldOverflow);
        }
        Ok(found)
    }

    fn zone_field(&mut self, index: usize) -> Result<Mask, DateError> {
        self.zone_east = decode_zone_offset(self.text(index))?;
        Ok(ZONE)
    }

    /// A number: after a label (`y2001`, `j2451187`, `t134500`) its field; otherwise a
    /// date with a point (`2024.060`), a run-together date or time, or one field.
    fn number_field(&mut self, index: usize) -> Result<Mask, DateError> {
        if let Some(unit) = self.prefix.take() {
            return self.labelled_number(self.text(index), unit);
        }
        let text = self.text(index);
        let point = text.find('.');
        if point.is_some() && self.seen & DATE_FIELDS == 0 {
            decode_date(text, self.seen, &mut self.numbers, &mut self.tm)
        } else if point.is_some_and(|point| point > 2)
            || text.len() >= 6 && (self.seen & DATE_FIELDS == 0 || self.seen & TIME_FIELDS == 0)
        {
            decode_number_field(text, self.seen, &mut self.numbers, &mut self.tm)
        } else {
            decode_number(text, self.seen, &mut self.numbers, &mut self.tm)
        }
    }

    /// The number after a label. Only seconds, Julian days and times take a fraction.
    fn labelled_number(&mut self, text: &str, unit: Unit) -> Result<Mask, DateError> {
        let (value, rest) = c_integer(text)?;
        let fraction_allowed = matches!(unit, Unit::Julian | Unit::Time | Unit::Second);
        if rest.starts_with('.') && !fraction_allowed || !rest.is_empty() && !rest.starts_with('.')
        {
            return Err(DateError::BadFormat);
        }
        self.outcome = Outcome::Date;
        let tm = &mut self.tm;
        Ok(match unit {
            Unit::Year => set(&mut tm.year, value, YEAR),
            Unit::Month if self.seen & MONTH != 0 && self.seen & HOUR != 0 => {
                set(&mut tm.minute, value, MINUTE)
            }
            Unit::Month => set(&mut tm.month, value, MONTH),
            Unit::Day => set(&mut tm.day, value, DAY),
            Unit::Hour => set(&mut tm.hour, value, HOUR),
            Unit::Minute => set(&mut tm.minute, value, MINUTE),
            Unit::Second if rest.is_empty() => set(&mut tm.second, value, SECOND),
            Unit::Second => {
                tm.second = value;
                tm.fraction_micros = fraction_micros(rest)?;
                SECOND_PARTS
            }
            Unit::Julian => self.julian_number(value, rest)?,
            Unit::Time => {
                let found =
                    decode_number_field(text, self.seen | DATE_FIELDS, &mut self.numbers, tm)?;
                if found != TIME_FIELDS {
                    return Err(DateError::BadFormat);
                }
                found
            }
            Unit::Other => return Err(DateError::BadFormat),
        })
    }

    /// `j2451187` or `j2451187.5` (a fraction of a day is a time).
    fn julian_number(&mut self, day: i32, fraction: &str) -> Result<Mask, DateError> {
        if day < 0 {
            return Err(DateError::FieldOverflow);
        }
        self.tm.set_julian_day(i64::from(day))?;
        self.julian = true;
        if fraction.is_empty() {
            return Ok(DATE_FIELDS);
        }
        let digits = &fraction[1..];
        if !digits.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(DateError::BadFormat);
        }
        let day_fraction: f64 = format!("0.{digits}0").parse().unwrap_or(0.0);
        #[allow(clippy::cast_possible_truncation)]
        let micros = (day_fraction * 86_400_000_000.0) as i64;
        self.tm.hour = narrow(micros / 3_600_000_000)?;
        self.tm.minute = narrow(micros / 60_000_000 % 60)?;
        self.tm.second = narrow(micros / 1_000_000 % 60)?;
        self.tm.fraction_micros = micros % 1_000_000;
        Ok(DATE_FIELDS | TIME_FIELDS)
    }
}

fn set(field: &mut i32, value: i32, mask: Mask) -> Mask {
    *field = value;
    mask
}

mod words;
