//! The decoder's words (zone abbreviations, keywords, zone names), the fields of time-only
//! input, and the checks at the end of each kind of input.

use super::*;

const SECONDS_PER_HOUR: i32 = 3600;
const MICROSECONDS_PER_DAY: i64 = 86_400_000_000;

impl Decoder<'_> {
    /// A word: a zone abbreviation, a keyword, or a zone name. `None` for a word read and
    /// dropped (`at`, `on`).
    pub(super) fn word_field(
        &mut self,
        index: usize,
        time_only: bool,
    ) -> Result<Option<Mask>, DateError> {
        let text = self.text(index);
        if let Some((east_seconds, daylight)) = zone_abbreviation(text) {
            self.zone_east = east_seconds;
            return Ok(Some(if daylight { DAYLIGHT_ZONE | ZONE } else { ZONE }));
        }
        let Some(word) = keyword(text) else {
            let zone = Zone::by_name(text).ok_or(DateError::BadFormat)?;
            self.named_zone = Some(zone);
            return Ok(Some(ZONE));
        };
        Ok(Some(match word {
            Keyword::Ignored => return Ok(None),
            Keyword::Special(special) if time_only => self.time_special(special)?,
            Keyword::Special(special) => self.special(special)?,
            Keyword::Month(_) | Keyword::DayOfWeek if time_only => {
                return Err(DateError::BadFormat)
            }
            Keyword::Month(month) => self.month_name(month),
            Keyword::DayOfWeek => DAY_OF_WEEK,
            Keyword::DaylightModifier => {
                self.zone_east += SECONDS_PER_HOUR;
                DAYLIGHT_MODIFIER | DAYLIGHT_ZONE
            }
            Keyword::Meridiem(meridiem) => {
                self.meridiem = Some(meridiem);
                MERIDIEM
            }
            Keyword::Era(before_christ) => {
                self.before_christ = before_christ;
                ERA
            }
            Keyword::Unit(unit) => {
                self.prefix = Some(unit);
                0
            }
            Keyword::IsoTime => self.iso_time(index, time_only)?,
        }))
    }

    /// A month's name; a number read as the month before it was the day (`29 feb`).
    fn month_name(&mut self, month: i32) -> Mask {
        let mut found = MONTH;
        let numeric_month = self.seen & MONTH != 0 && !self.numbers.have_text_month;
        if numeric_month && self.seen & DAY == 0 && (1..=31).contains(&self.tm.month) {
            self.tm.day = self.tm.month;
            found = DAY;
        }
        self.numbers.have_text_month = true;
        self.tm.month = month;
        found
    }

    /// ISO 8601's `t`: a full date before it and a time after it.
    fn iso_time(&mut self, index: usize, time_only: bool) -> Result<Mask, DateError> {
        if !time_only && self.seen & DATE_FIELDS != DATE_FIELDS {
            return Err(DateError::BadFormat);
        }
        let next = self.fields.get(index + 1).map(|field| field.kind);
        if !matches!(next, Some(FieldKind::Number | FieldKind::Time | FieldKind::Date)) {
            return Err(DateError::BadFormat);
        }
        self.prefix = Some(Unit::Time);
        Ok(0)
    }

    fn special(&mut self, special: Special) -> Result<Mask, DateError> {
        match special {
            Special::Now => {
                let clock = (self.clock)();
                self.set_local(clock.local_micros)?;
                self.zone_east = clock.offset_east_seconds;
                self.outcome = Outcome::Date;
                Ok(DATE_FIELDS | TIME_FIELDS | ZONE)
            }
            Special::Yesterday | Special::Today | Special::Tomorrow => {
                let shift = match special {
                    Special::Yesterday => -1,
                    Special::Today => 0,
                    _ => 1,
                };
                let today = (self.clock)().local_micros.div_euclid(MICROSECONDS_PER_DAY);
                let julian = today + shift + crate::types::EPOCH_JULIAN_DAY;
                self.tm.set_julian_day(julian)?;
                self.outcome = Outcome::Date;
                Ok(DATE_FIELDS)
            }
            Special::Zulu => {
                (self.tm.hour, self.tm.minute, self.tm.second) = (0, 0, 0);
                self.zone_east = 0;
                self.outcome = Outcome::Date;
                Ok(TIME_FIELDS | ZONE)
            }
            Special::Epoch => self.reserved(Outcome::Epoch),
            Special::Late => self.reserved(Outcome::Late),
            Special::Early => self.reserved(Outcome::Early),
        }
    }

    fn reserved(&mut self, outcome: Outcome) -> Result<Mask, DateError> {
        self.outcome = outcome;
        Ok(RESERVED)
    }

    /// Time-only input knows `now` (the time of day) and `allballs`.
    fn time_special(&mut self, special: Special) -> Result<Mask, DateError> {
        match special {
            Special::Now => {
                let time = (self.clock)().local_micros.rem_euclid(MICROSECONDS_PER_DAY);
                self.set_time(time)?;
                Ok(TIME_FIELDS)
            }
            Special::Zulu => {
                (self.tm.hour, self.tm.minute, self.tm.second) = (0, 0, 0);
                Ok(TIME_FIELDS | ZONE)
            }
            _ => Err(DateError::BadFormat),
        }
    }

    fn set_local(&mut self, local_micros: i64) -> Result<(), DateError> {
        let days = local_micros.div_euclid(MICROSECONDS_PER_DAY);
        self.tm.set_julian_day(days + crate::types::EPOCH_JULIAN_DAY)?;
        self.set_time(local_micros.rem_euclid(MICROSECONDS_PER_DAY))
    }

    fn set_time(&mut self, micros: i64) -> Result<(), DateError> {
        self.tm.hour = narrow(micros / 3_600_000_000)?;
        self.tm.minute = narrow(micros / 60_000_000 % 60)?;
        self.tm.second = narrow(micros / 1_000_000 % 60)?;
        self.tm.fraction_micros = micros % 1_000_000;
        Ok(())
    }

    /// Time-only input takes a date only as its first field, before a time or with a
    /// date last; otherwise a date field is a zone.
    pub(super) fn time_date_field(&mut self, index: usize) -> Result<Mask, DateError> {
        let text = self.text(index);
        let count = self.fields.len();
        let kind_at = |at: usize| self.fields[at].kind;
        if index == 0
            && count >= 2
            && (kind_at(count - 1) == FieldKind::Date || kind_at(1) == FieldKind::Time)
        {
            return decode_date(text, self.seen, &mut self.numbers, &mut self.tm);
        }
        if text.as_bytes()[0].is_ascii_digit() {
            return self.time_with_offset(text, self.seen | DATE_FIELDS);
        }
        self.named_zone_field(text)
    }

    pub(super) fn time_number_field(&mut self, index: usize) -> Result<Mask, DateError> {
        if let Some(unit) = self.prefix.take() {
            return self.labelled_number(self.text(index), unit);
        }
        let text = self.text(index);
        let count = self.fields.len();
        let seen = self.seen | DATE_FIELDS;
        match text.find('.') {
            Some(_)
                if index == 0 && count >= 2 && self.fields[count - 1].kind == FieldKind::Date =>
            {
                decode_date(text, self.seen, &mut self.numbers, &mut self.tm)
            }
            Some(point) if point > 2 => {
                decode_number_field(text, seen, &mut self.numbers, &mut self.tm)
            }
            Some(_) => Err(DateError::BadFormat),
            None if text.len() > 4 => {
                decode_number_field(text, seen, &mut self.numbers, &mut self.tm)
            }
            None => {
                self.numbers.have_text_month = false;
                decode_number(text, seen, &mut self.numbers, &mut self.tm)
            }
        }
    }

    /// The year renumbered and checked, and AM / PM applied.
    fn finish_fields(&mut self) -> Result<(), DateError> {
        let era = Era {
            julian: self.julian,
            two_digit_year: self.numbers.two_digit_year,
            before_christ: self.before_christ,
        };
        validate_date(self.seen, &era, &mut self.tm)?;
        let Some(meridiem) = self.meridiem else { return Ok(()) };
        if self.tm.hour > 12 {
            return Err(DateError::FieldOverflow);
        }
        self.tm.hour = match (meridiem, self.tm.hour) {
            (Meridiem::Am, 12) => 0,
            (Meridiem::Pm, hour) if hour != 12 => hour + 12,
            (_, hour) => hour,
        };
        Ok(())
    }

    pub(super) fn finish_date_time(mut self) -> Result<Decoded, DateError> {
        self.finish_fields()?;
        if self.outcome == Outcome::Date && self.seen & DATE_FIELDS != DATE_FIELDS {
            return Err(DateError::BadFormat);
        }
        let zone = self.zone_choice()?;
        Ok(Decoded { outcome: self.outcome, tm: self.tm, zone })
    }

    pub(super) fn finish_time_only(mut self) -> Result<Tm, DateError> {
        self.finish_fields()?;
        if time_overflows(&self.tm) {
            return Err(DateError::FieldOverflow);
        }
        if self.seen & TIME_FIELDS != TIME_FIELDS {
            return Err(DateError::BadFormat);
        }
        // A zone with daylight-saving rules needs a date to give an offset.
        let named_with_rules = matches!(self.named_zone, Some(Zone::Named(_)));
        if named_with_rules && self.seen & DATE_FIELDS != DATE_FIELDS {
            return Err(DateError::BadFormat);
        }
        self.zone_choice()?;
        Ok(self.tm)
    }

    /// The zone the input named, or the session's; `DST` needs a standard-time
    /// abbreviation before it.
    fn zone_choice(&mut self) -> Result<ZoneChoice, DateError> {
        let daylight_modifier = self.seen & DAYLIGHT_MODIFIER != 0;
        if let Some(zone) = self.named_zone.take() {
            if daylight_modifier {
                return Err(DateError::BadFormat);
            }
            return Ok(ZoneChoice::Named(zone));
        }
        if self.seen & ZONE != 0 {
            return Ok(ZoneChoice::OffsetEast(self.zone_east));
        }
        if daylight_modifier {
            return Err(DateError::BadFormat);
        }
        Ok(ZoneChoice::Session)
    }
}
