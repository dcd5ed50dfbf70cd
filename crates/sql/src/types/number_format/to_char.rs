//! The to_char processor (formatting.c's NUM_processor and NUM_numpart_to_char writing).
//!
//! It walks the template's nodes once, writing the number's digits (`Digits`) into the
//! pattern positions. Its state, per digit pattern (`9`, `0`, `.`, `D`):
//!
//! - `digit_index`: which digit pattern this is, counted over the whole template;
//!   those before `spaces_before` write a space (or a zero from the first `0` on).
//! - `position`: the next character of the number's text to write.
//! - `sign_written`: the sign goes just before the first digit written (or a space for
//!   a positive number), once; `PR`'s `>` and a trailing `S` go after the last one.
//! - `last_relevant` (FM with a point): the last digit after the point that is not a
//!   trailing zero; digits past it are not written.

use crate::error::Result;

use super::{ordinal_suffix, Description, Digits, LocaleSign, Node, Pattern, ROMAN_WIDTH};

/// The C locale's symbols (lc_numeric and lc_monetary are C in tierdb).
const DECIMAL_POINT: char = '.';
const THOUSANDS_SEPARATOR: char = ',';
const CURRENCY_SYMBOL: char = ' ';

pub(super) struct ToChar {
    description: Description,
    number: Vec<u8>,
    sign: u8,
    spaces_before: usize,
    sign_written: bool,
    /// Digit patterns minus one, plus one when the sign is still to be written beside the
    /// digits (formatting.c's num_count; -1 for a template without digits).
    digit_count: i64,
    digit_index: usize,
    inside_number: bool,
    position: usize,
    last_relevant: Option<usize>,
    output: String,
}

impl ToChar {
    pub(super) fn new(description: Description, digits: Digits) -> ToChar {
        let mut description = description;
        let mut sign = digits.sign;
        if description.roman {
            // Only FM survives RN: no digits, no sign.
            description = Description {
                fill: description.fill,
                roman: true,
                zero_start: description.zero_start,
                ..Description::default()
            };
            sign = 0;
        }
        // zero_start counts from 1 in the description and from 0 here.
        description.zero_start = description.zero_start.saturating_sub(1);
        let mut processor = ToChar {
            description,
            number: digits.text,
            sign,
            spaces_before: if description.roman { 0 } else { digits.spaces_before },
            sign_written: false,
            digit_count: 0,
            digit_index: 0,
            inside_number: false,
            position: 0,
            last_relevant: None,
            output: String::new(),
        };
        processor.prepare_sign();
        processor.prepare_count();
        processor
    }

    fn prepare_sign(&mut self) {
        let description = &mut self.description;
        if description.plus || description.minus {
            // MI / PL / SG write the sign where they stand; only PL alone wants it written
            // beside the digits as well (as a space for a positive number).
            self.sign_written = !description.plus || description.minus;
            return;
        }
        if self.sign != b'-' && description.fill {
            description.angle = false;
        }
        self.sign_written = self.sign == b'+' && description.fill && !description.has_locale_sign();
        if description.locale_sign == LocaleSign::Before
            && description.digits_before_point == description.digits_before_sign
        {
            description.locale_sign = LocaleSign::After;
        }
    }

    fn prepare_count(&mut self) {
        let description = &self.description;
        self.digit_count =
            small(description.digits_after_point + description.digits_before_point) - 1;
        if description.fill && description.point {
            self.last_relevant = self.last_relevant_digit();
        }
        if !self.sign_written && self.spaces_before == 0 {
            self.digit_count += 1;
        }
    }

    /// The last digit after the point that is not a trailing zero (the point itself when
    /// all are zeros), moved right to keep the template's `0`s after the point.
    fn last_relevant_digit(&self) -> Option<usize> {
        let point = self.number.iter().position(|byte| *byte == b'.')?;
        let mut relevant = point;
        for (index, byte) in self.number.iter().enumerate().skip(point + 1) {
            if *byte != b'0' {
                relevant = index;
            }
        }
        let zero_end = self.description.zero_end;
        if zero_end > self.spaces_before {
            let last_zero = (self.number.len() - 1).min(zero_end - self.spaces_before);
            relevant = relevant.max(last_zero);
        }
        Some(relevant)
    }

    fn current(&self) -> u8 {
        self.number.get(self.position).copied().unwrap_or(0)
    }

    fn last_relevant_is_point(&self) -> bool {
        self.last_relevant.is_some_and(|index| self.number[index] == b'.')
    }

    /// A zero before the point that a `9` writes as a space: `0.5` in `9.9` is ` .5`.
    fn space_before_point(&self) -> bool {
        !self.description.zero
            && self.position == 0
            && self.number.first() == Some(&b'0')
            && self.description.digits_after_point != 0
    }

    fn push_byte(&mut self, byte: u8) {
        self.output.push(char::from(byte));
    }

    pub(super) fn run(mut self, nodes: &[Node]) -> Result<String> {
        for node in nodes {
            match node {
                Node::Literal(character) => self.output.push(*character),
                Node::Pattern(pattern) => self.pattern(*pattern)?,
            }
        }
        // A NUL written (SG without a sign, a digit past the number's end) ends the text,
        // as it ends PostgreSQL's C string.
        Ok(match self.output.find('\0') {
            Some(end) => self.output[..end].to_string(),
            None => self.output,
        })
    }

    fn pattern(&mut self, pattern: Pattern) -> Result<()> {
        let fill = self.description.fill;
        match pattern {
            Pattern::Nine | Pattern::Zero | Pattern::Point | Pattern::LocaleDecimal => {
                self.digit(pattern);
            }
            Pattern::Comma | Pattern::Group => {
                if self.inside_number {
                    self.output.push(THOUSANDS_SEPARATOR);
                } else if !fill {
                    self.output.push(' ');
                }
            }
            Pattern::Locale => self.output.push(CURRENCY_SYMBOL),
            Pattern::RomanUpper | Pattern::RomanLower => self.roman(pattern),
            Pattern::OrdinalUpper | Pattern::OrdinalLower => self.ordinal(pattern)?,
            Pattern::Minus => self.sign_pattern(b'-', fill),
            Pattern::Plus => self.sign_pattern(b'+', fill),
            Pattern::Sign => self.push_byte(self.sign),
            _ => {}
        }
        Ok(())
    }

    fn sign_pattern(&mut self, wanted: u8, fill: bool) {
        if self.sign == wanted {
            self.push_byte(wanted);
        } else if !fill {
            self.output.push(' ');
        }
    }

    fn roman(&mut self, pattern: Pattern) {
        let mut numeral = String::from_utf8_lossy(&self.number[self.position..]).into_owned();
        if pattern == Pattern::RomanLower {
            numeral = numeral.to_lowercase();
        }
        if self.description.fill {
            self.output.push_str(&numeral);
        } else {
            self.output.push_str(&format!("{numeral:>ROMAN_WIDTH$}"));
        }
    }

    fn ordinal(&mut self, pattern: Pattern) -> Result<()> {
        if self.description.roman
            || self.number.first() == Some(&b'#')
            || self.sign == b'-'
            || self.description.point
        {
            return Ok(());
        }
        let suffix = ordinal_suffix(&self.number, pattern == Pattern::OrdinalUpper)?;
        self.output.push_str(suffix);
        Ok(())
    }

    /// A digit pattern: the sign if it is due, then a space, a zero, the point or the next
    /// digit, then the closing sign after the last digit.
    fn digit(&mut self, pattern: Pattern) {
        if self.description.roman {
            return;
        }
        self.inside_number = false;
        self.sign_if_due();
        if self.digit_index < self.spaces_before
            && (self.description.zero_start > self.digit_index || !self.description.zero)
        {
            if !self.description.fill {
                self.output.push(' ');
            }
        } else if self.description.zero
            && self.digit_index < self.spaces_before
            && self.description.zero_start <= self.digit_index
        {
            self.output.push('0');
            self.inside_number = true;
        } else {
            self.digit_or_point(pattern);
        }
        self.closing_sign();
        self.digit_index += 1;
    }

    fn sign_if_due(&mut self) {
        let description = &self.description;
        let reached = self.digit_index >= self.spaces_before
            || (description.zero && description.zero_start == self.digit_index);
        if self.sign_written
            || !reached
            || (self.space_before_point() && !self.last_relevant_is_point())
        {
            return;
        }
        if description.has_locale_sign() {
            if description.locale_sign == LocaleSign::Before {
                self.push_byte(self.sign_character());
                self.sign_written = true;
            }
        } else if description.angle {
            self.output.push(if self.sign == b'+' { ' ' } else { '<' });
            self.sign_written = true;
        } else if self.sign == b'+' {
            if !description.fill {
                self.output.push(' ');
            }
            self.sign_written = true;
        } else if self.sign == b'-' {
            self.output.push('-');
            self.sign_written = true;
        }
    }

    fn sign_character(&self) -> u8 {
        if self.sign == b'-' {
            b'-'
        } else {
            b'+'
        }
    }

    fn digit_or_point(&mut self, pattern: Pattern) {
        if self.current() == b'.' {
            // formatting.c writes the point whether or not digits follow it.
            self.output.push(DECIMAL_POINT);
        } else if self.last_relevant.is_some_and(|index| self.position > index)
            && pattern != Pattern::Zero
        {
            // A trailing zero that FM drops.
        } else if self.space_before_point() {
            if !self.description.fill {
                self.output.push(' ');
            } else if self.last_relevant_is_point() {
                self.output.push('0');
            }
        } else {
            self.push_byte(self.current());
            self.inside_number = true;
        }
        if self.current() != 0 {
            self.position += 1;
        }
    }

    fn closing_sign(&mut self) {
        let description = &self.description;
        let mut end =
            self.digit_count + i64::from(self.spaces_before > 0) + i64::from(description.point);
        if self.last_relevant.is_some_and(|index| index == self.position) {
            end = small(self.digit_index);
        }
        if small(self.digit_index) + 1 != end {
            return;
        }
        if self.sign_written && description.angle {
            self.output.push(if self.sign == b'+' { ' ' } else { '>' });
        } else if description.locale_sign == LocaleSign::After {
            self.push_byte(self.sign_character());
        }
    }
}

/// A count of template characters as a signed number (templates are far shorter than
/// i64::MAX).
fn small(count: usize) -> i64 {
    i64::try_from(count).expect("a template's length fits in i64")
}
