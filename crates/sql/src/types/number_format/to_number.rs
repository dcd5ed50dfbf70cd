//! The to_number processor (formatting.c's NUM_processor reading and
//! NUM_numpart_from_char): each template node reads at most a few input bytes.
//!
//! - Digit patterns (`9`, `0`) read one digit, a sign just before the first digit
//!   (`-`, `+`, or `<` under PR) and a sign just after the last (under `S`, MI, PL or SG);
//!   `.`/`D` reads the point. Digits past the template's count after the point are not read.
//! - `,`/`G` read a separator if one is there; without FM the position moves on anyway.
//! - MI, PL, SG read their sign where they stand; L, TH and literals skip input.
//!
//! The digits read are then numeric input with the template's precision and the scale of
//! the digits read after the point, which rounds and checks as a numeric(p, s) column does.

use rust_decimal::Decimal;

use super::{compile, Description, Node, Pattern, SHIFT_SCALE_MIN};
use crate::error::{Result, SqlError};
use crate::types::{apply_numeric_typmod, parse_numeric};

/// Input bytes an `S`, MI, PL or SG reads; anything else is data to L and TH.
const DATA_BYTES: &[u8] = b"0123456789.,+-";

/// to_number(text, template); None (NULL) for an empty template, as in PostgreSQL.
pub fn parse_number_pattern(input: &str, template: &str) -> Result<Option<Decimal>> {
    if template.is_empty() {
        return Ok(None);
    }
    let (nodes, description) = compile(template)?;
    if description.exponent {
        return Err(SqlError::unsupported("\"EEEE\" not supported for input"));
    }
    if description.roman {
        return Err(SqlError::unsupported("\"RN\" not supported for input"));
    }
    let mut reader = ToNumber {
        description,
        input: input.as_bytes(),
        position: 0,
        sign: b' ',
        digits: Vec::new(),
        read_point: false,
        read_before: 0,
        read_after: 0,
    };
    for node in &nodes {
        if reader.at_end() {
            break;
        }
        match node {
            Node::Literal(_) => reader.skip_character(),
            Node::Pattern(pattern) => reader.pattern(*pattern),
        }
    }
    reader.number().map(Some)
}

struct ToNumber<'a> {
    description: Description,
    input: &'a [u8],
    position: usize,
    /// The sign read: a space until one is.
    sign: u8,
    digits: Vec<u8>,
    read_point: bool,
    read_before: usize,
    read_after: usize,
}

impl ToNumber<'_> {
    fn at_end(&self) -> bool {
        self.position >= self.input.len()
    }

    fn current(&self) -> u8 {
        self.input.get(self.position).copied().unwrap_or(0)
    }

    /// Moves past one character (all its UTF-8 bytes).
    fn skip_character(&mut self) {
        let width = match self.current() {
            byte if byte < 0x80 => 1,
            byte if byte >= 0xF0 => 4,
            byte if byte >= 0xE0 => 3,
            _ => 2,
        };
        self.position += width;
    }

    /// Skips up to `count` characters that are not numeric data.
    fn skip_non_data(&mut self, count: usize) {
        for _ in 0..count {
            if self.at_end() || DATA_BYTES.contains(&self.current()) {
                break;
            }
            self.skip_character();
        }
    }

    fn pattern(&mut self, pattern: Pattern) {
        let fill = self.description.fill;
        match pattern {
            Pattern::Nine | Pattern::Zero | Pattern::Point | Pattern::LocaleDecimal => {
                self.digit(pattern);
                self.position += 1;
            }
            Pattern::Comma | Pattern::Group if !fill && self.current() == b',' => {
                self.position += 1;
            }
            Pattern::Locale => self.skip_non_data(1),
            Pattern::OrdinalUpper | Pattern::OrdinalLower if !self.description.point => {
                self.skip_non_data(2);
            }
            Pattern::Minus => self.sign_pattern(self.current() == b'-'),
            Pattern::Plus => self.sign_pattern(self.current() == b'+'),
            Pattern::Sign => self.sign_pattern(matches!(self.current(), b'-' | b'+')),
            _ => {}
        }
    }

    fn sign_pattern(&mut self, matches: bool) {
        if matches {
            self.sign = self.current();
            self.position += 1;
        } else {
            self.skip_non_data(1);
        }
    }

    /// A digit pattern: a leading sign, a digit or the point, then a trailing sign.
    fn digit(&mut self, pattern: Pattern) {
        if self.at_end() {
            return;
        }
        if self.current() == b' ' {
            self.position += 1;
        }
        if self.at_end() {
            return;
        }
        if self.sign == b' '
            && matches!(pattern, Pattern::Nine | Pattern::Zero)
            && self.read_before + self.read_after == 0
        {
            self.leading_sign();
        }
        if self.at_end() {
            return;
        }
        let current = self.current();
        let mut read = false;
        if current.is_ascii_digit() {
            if self.read_point && self.read_after == self.description.digits_after_point {
                return;
            }
            self.digits.push(current);
            if self.read_point {
                self.read_after += 1;
            } else {
                self.read_before += 1;
            }
            read = true;
        } else if self.description.point && !self.read_point && current == b'.' {
            self.digits.push(b'.');
            self.read_point = true;
            read = true;
        }
        if !self.at_end() && self.sign == b' ' && self.read_before + self.read_after > 0 {
            self.trailing_sign(read);
        }
    }

    fn leading_sign(&mut self) {
        let current = self.current();
        // `S` and PR never come together (the template is refused), so `<` is PR's.
        if current == b'-' || (self.description.angle && current == b'<') {
            self.sign = b'-';
            self.position += 1;
        } else if current == b'+' {
            self.sign = b'+';
            self.position += 1;
        }
    }

    /// A sign right after the digits: `S`'s after a digit or point just read, followed by a
    /// non-digit; MI/PL/SG's when this pattern read nothing.
    fn trailing_sign(&mut self, read: bool) {
        let description = &self.description;
        let next_is_digit = self.input.get(self.position + 1).is_some_and(u8::is_ascii_digit);
        if description.has_locale_sign()
            && read
            && self.position + 1 < self.input.len()
            && !next_is_digit
        {
            let next = self.input[self.position + 1];
            if next == b'-' || next == b'+' {
                self.sign = next;
                self.position += 1;
            }
        } else if !read
            && !description.has_locale_sign()
            && (description.plus || description.minus)
            && matches!(self.current(), b'-' | b'+')
        {
            self.sign = self.current();
        }
    }

    /// The digits read as numeric(precision, scale) input, shifted back by V's power of ten.
    fn number(mut self) -> Result<Decimal> {
        if self.digits.last() == Some(&b'.') {
            self.digits.pop();
        }
        let mut text = String::with_capacity(self.digits.len() + 1);
        text.push(char::from(self.sign));
        text.extend(self.digits.iter().map(|byte| char::from(*byte)));
        let scale =
            u32::try_from(self.read_after).map_err(|_| SqlError::out_of_range("numeric"))?;
        let precision =
            u32::try_from(self.description.digits_before_point + self.description.shift_digits)
                .ok()
                .and_then(|digits| digits.checked_add(scale))
                .ok_or_else(|| SqlError::out_of_range("numeric"))?;
        let value = apply_numeric_typmod(parse_numeric(&text)?, Some(precision), Some(scale))?;
        if !self.description.shift {
            return Ok(value);
        }
        let shift = u32::try_from(self.description.shift_digits)
            .ok()
            .filter(|digits| *digits <= 28)
            .ok_or_else(|| SqlError::out_of_range("numeric"))?;
        let mut shifted = value * Decimal::new(1, shift);
        shifted.rescale(shift.max(SHIFT_SCALE_MIN).max(scale));
        Ok(shifted)
    }
}
