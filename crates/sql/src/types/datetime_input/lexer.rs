//! ParseDateTime: date/time input cut into typed fields before any field is interpreted,
//! as PostgreSQL's datetime.c does it, so that the decoder sees the same fields.
//!
//! Letters are lowered; digits stay as written. A field is a number (`20240229`, `12.5`),
//! a date with separators (`2024-02-29`, `02/29/2024`, `2024-feb-29`, `america/new_york`),
//! a time (`13:45:00.5`), a signed zone offset (`-08`, `+05:30`), a word (`feb`, `pm`,
//! `est`) or a signed word (`-infinity`). Other punctuation separates fields.

use super::DateError;

/// PostgreSQL's MAXDATEFIELDS: input with more fields is not a date or time.
const FIELD_COUNT_MAX: usize = 25;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FieldKind {
    Number,
    Word,
    Date,
    Time,
    Zone,
    Signed,
}

#[derive(Clone, Debug)]
pub(super) struct Field {
    pub text: String,
    pub kind: FieldKind,
}

/// The input's fields, or BadFormat for a character no field can hold.
pub(super) fn split_fields(input: &str) -> Result<Vec<Field>, DateError> {
    let mut scanner = Scanner { bytes: input.as_bytes(), position: 0 };
    let mut fields = Vec::new();
    while let Some(byte) = scanner.peek() {
        if byte.is_ascii_whitespace() {
            scanner.position += 1;
            continue;
        }
        let field = if byte.is_ascii_digit() {
            scanner.digits_first()
        } else if byte == b'.' {
            let mut text = String::from(".");
            scanner.position += 1;
            scanner.take_while(&mut text, |byte| byte.is_ascii_digit());
            Field { text, kind: FieldKind::Number }
        } else if byte.is_ascii_alphabetic() {
            scanner.letters_first()
        } else if byte == b'+' || byte == b'-' {
            scanner.signed()?
        } else if byte.is_ascii_punctuation() {
            scanner.position += 1;
            continue;
        } else {
            return Err(DateError::BadFormat);
        };
        fields.push(field);
        if fields.len() > FIELD_COUNT_MAX {
            return Err(DateError::BadFormat);
        }
    }
    Ok(fields)
}

struct Scanner<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn peek_is(&self, test: impl Fn(u8) -> bool) -> bool {
        self.peek().is_some_and(test)
    }

    /// Appends bytes (lowered) while `test` holds.
    fn take_while(&mut self, text: &mut String, test: impl Fn(u8) -> bool) {
        while let Some(byte) = self.peek().filter(|byte| test(*byte)) {
            text.push(char::from(byte.to_ascii_lowercase()));
            self.position += 1;
        }
    }

    /// A field starting with a digit: a time (`13:45`), a date (`2024-02-29`, with a
    /// month's name inside: `2024-feb-29`), a number with a point (`12.5`) or a number.
    fn digits_first(&mut self) -> Field {
        let mut text = String::new();
        self.take_while(&mut text, |byte| byte.is_ascii_digit());
        match self.peek() {
            Some(b':') => {
                self.take_while(&mut text, |byte| {
                    byte.is_ascii_digit() || byte == b':' || byte == b'.'
                });
                Field { text, kind: FieldKind::Time }
            }
            Some(delimiter @ (b'-' | b'/' | b'.')) => {
                text.push(char::from(delimiter));
                self.position += 1;
                let kind = self.date_rest(&mut text, delimiter);
                Field { text, kind }
            }
            _ => Field { text, kind: FieldKind::Number },
        }
    }

    /// The rest of a field after its first number and delimiter. Only a second delimiter
    /// like the first makes `12.5` a date; `2024-02` is a date already.
    fn date_rest(&mut self, text: &mut String, delimiter: u8) -> FieldKind {
        if !self.peek_is(|byte| byte.is_ascii_digit()) {
            self.take_while(text, |byte| byte.is_ascii_alphanumeric() || byte == delimiter);
            return FieldKind::Date;
        }
        self.take_while(text, |byte| byte.is_ascii_digit());
        if self.peek() != Some(delimiter) {
            return if delimiter == b'.' { FieldKind::Number } else { FieldKind::Date };
        }
        self.take_while(text, |byte| byte.is_ascii_digit() || byte == delimiter);
        FieldKind::Date
    }

    /// A word, or a date or zone name that starts with letters (`feb-29-2024`,
    /// `america/new_york`, `etc/gmt+5`). Before a digit or `+`, a keyword (`j2451187`,
    /// `t13:45`) stays a word of its own.
    fn letters_first(&mut self) -> Field {
        let mut text = String::new();
        self.take_while(&mut text, |byte| byte.is_ascii_alphabetic());
        let continues_as_date = match self.peek() {
            Some(b'-' | b'/' | b'.') => true,
            Some(byte) if byte == b'+' || byte.is_ascii_digit() => {
                super::keywords::keyword(&text).is_none()
            }
            _ => false,
        };
        if !continues_as_date {
            return Field { text, kind: FieldKind::Word };
        }
        self.take_while(&mut text, |byte| {
            byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'-' | b'/' | b'_' | b'.' | b':')
        });
        Field { text, kind: FieldKind::Date }
    }

    /// A sign: a numeric zone (`-08`, `+05:30`) or a signed word (`-infinity`); spaces
    /// after the sign are skipped.
    fn signed(&mut self) -> Result<Field, DateError> {
        let mut text = String::new();
        text.push(char::from(self.bytes[self.position]));
        self.position += 1;
        while self.peek_is(|byte| byte.is_ascii_whitespace()) {
            self.position += 1;
        }
        if self.peek_is(|byte| byte.is_ascii_digit()) {
            self.take_while(&mut text, |byte| {
                byte.is_ascii_digit() || matches!(byte, b':' | b'.' | b'-')
            });
            return Ok(Field { text, kind: FieldKind::Zone });
        }
        if self.peek_is(|byte| byte.is_ascii_alphabetic()) {
            self.take_while(&mut text, |byte| byte.is_ascii_alphabetic());
            return Ok(Field { text, kind: FieldKind::Signed });
        }
        Err(DateError::BadFormat)
    }
}
