//! format(formatstr, VARIADIC "any"): PostgreSQL's text_format (varlena.c), its
//! specifiers `%[position$][-][width | * | *position$]{s | I | L}` and `%%`, with the same
//! errors at the same points (a specifier is checked before its arguments are fetched).

use super::{check_text_bytes, Call, TEXT_BYTES_MAX};
use crate::error::{Result, SqlError};
use crate::types::{Datum, SqlType};

/// One parsed specifier, as text_format_parse_format leaves it.
struct Specifier {
    /// `n$`: the argument (1-based, after the format string) to format; None for the next.
    position: Option<usize>,
    /// `-`: pad on the right.
    left_align: bool,
    /// A direct width (0 when none).
    width: i32,
    /// `*` or `*n$`: the width comes from an argument (Some(None): the next one).
    width_position: Option<Option<usize>>,
}

/// The format string's characters and a cursor over them.
struct Cursor<'a> {
    chars: &'a [char],
    at: usize,
}

impl Cursor<'_> {
    fn current(&self) -> char {
        self.chars[self.at]
    }

    /// Steps on; PostgreSQL's ADVANCE_PARSE_POINTER: the string may not end inside a
    /// specifier.
    fn advance(&mut self) -> Result<()> {
        self.at += 1;
        if self.at >= self.chars.len() {
            return Err(invalid("unterminated format() type specifier"));
        }
        Ok(())
    }

    /// Digits at the cursor, if any (text_format_parse_digits: 22003 past int4).
    fn digits(&mut self) -> Result<Option<i32>> {
        let mut value: Option<i32> = None;
        while let Some(digit) = self.current().to_digit(10) {
            let digit = i32::try_from(digit).expect("a decimal digit fits i32");
            let next = value.unwrap_or(0).checked_mul(10).and_then(|v| v.checked_add(digit));
            value = Some(next.ok_or_else(|| SqlError::new("22003", "number is out of range"))?);
            self.advance()?;
        }
        Ok(value)
    }

    /// An argument position `n` just read, before its `$`: 0 is refused.
    fn position(number: i32) -> Result<usize> {
        if number == 0 {
            return Err(invalid("format specifies argument 0, but arguments are numbered from 1"));
        }
        Ok(usize::try_from(number).expect("digits are not negative"))
    }

    /// text_format_parse_format: the cursor is on the character after `%` and ends on the
    /// conversion character.
    fn specifier(&mut self) -> Result<Specifier> {
        let mut specifier =
            Specifier { position: None, left_align: false, width: 0, width_position: None };
        if let Some(number) = self.digits()? {
            if self.current() != '$' {
                specifier.width = number;
                return Ok(specifier);
            }
            specifier.position = Some(Self::position(number)?);
            self.advance()?;
        }
        while self.current() == '-' {
            specifier.left_align = true;
            self.advance()?;
        }
        if self.current() == '*' {
            self.advance()?;
            specifier.width_position = Some(match self.digits()? {
                Some(number) => {
                    if self.current() != '$' {
                        return Err(invalid("width argument position must be ended by \"$\""));
                    }
                    let position = Self::position(number)?;
                    self.advance()?;
                    Some(position)
                }
                None => None,
            });
        } else if let Some(number) = self.digits()? {
            specifier.width = number;
        }
        Ok(specifier)
    }
}

fn invalid(message: &str) -> SqlError {
    SqlError::new("22023", message)
}

/// The arguments after the format string, with their types as bound.
struct Arguments<'a> {
    values: &'a [Datum],
    types: &'a [SqlType],
    /// The next argument's index into `values` (PostgreSQL's `arg`, less one).
    next: usize,
}

impl Arguments<'_> {
    /// The argument at `position` (1-based), or the next one; the one after it is next.
    fn take(&mut self, position: Option<usize>) -> Result<(&Datum, &SqlType)> {
        if let Some(position) = position {
            self.next = position - 1;
        }
        let index = self.next;
        let value =
            self.values.get(index).ok_or_else(|| invalid("too few arguments for format()"))?;
        self.next += 1;
        Ok((value, self.types.get(index).unwrap_or(&SqlType::Text)))
    }

    /// A width argument: NULL is 0, an integer as it is, another type through its text
    /// (as pg_strtoint32 reads it).
    fn width(&mut self, position: Option<usize>) -> Result<i32> {
        let (value, ty) = self.take(position)?;
        let integer = match (value, ty) {
            (Datum::Null, _) => return Ok(0),
            (Datum::Int(value), SqlType::Int2 | SqlType::Int4) => *value,
            (value, ty) => {
                let text = value.to_text(ty).unwrap_or_default();
                crate::types::parse_integer(&text, &SqlType::Int4)?
            }
        };
        Ok(i32::try_from(integer).expect("an int4 argument fits i32"))
    }
}

/// format(formatstr, ...): NULL for a NULL format string.
pub(super) fn format(call: Call<'_>) -> Result<Datum> {
    let Some(template) = call.args[0].as_text() else { return Ok(Datum::Null) };
    let chars: Vec<char> = template.chars().collect();
    let mut arguments = Arguments {
        values: &call.args[1..],
        types: call.arg_types.get(1..).unwrap_or(&[]),
        next: 0,
    };
    let mut out = String::with_capacity(template.len());
    let mut cursor = Cursor { chars: &chars, at: 0 };
    while cursor.at < chars.len() {
        let c = cursor.current();
        if c != '%' {
            out.push(c);
            cursor.at += 1;
            continue;
        }
        cursor.advance()?;
        if cursor.current() == '%' {
            out.push('%');
            cursor.at += 1;
            continue;
        }
        let specifier = cursor.specifier()?;
        let conversion = cursor.current();
        if !matches!(conversion, 's' | 'I' | 'L') {
            return Err(invalid(&format!("unrecognized format() type specifier \"{conversion}\"")));
        }
        let width = match specifier.width_position {
            Some(position) => arguments.width(position)?,
            None => specifier.width,
        };
        let (value, ty) = arguments.take(specifier.position)?;
        let text = convert(value, ty, conversion)?;
        append(&mut out, &text, specifier.left_align, width)?;
        check_text_bytes(out.len())?;
        cursor.at += 1;
    }
    Ok(Datum::Text(out))
}

/// text_format_string_conversion: a value as %s, %I or %L writes it.
fn convert(value: &Datum, ty: &SqlType, conversion: char) -> Result<String> {
    let Some(text) = value.to_text(ty) else {
        return match conversion {
            's' => Ok(String::new()),
            'L' => Ok("NULL".to_string()),
            _ => {
                Err(SqlError::new("22004", "null values cannot be formatted as an SQL identifier"))
            }
        };
    };
    Ok(match conversion {
        'I' => crate::identifiers::quote_identifier(&text),
        'L' => super::text::literal(&text),
        _ => text,
    })
}

/// text_format_append_string: padded with spaces to `width` characters, on the left
/// unless left-aligned (a negative width left-aligns too).
fn append(out: &mut String, text: &str, left_align: bool, width: i32) -> Result<()> {
    if width == i32::MIN {
        return Err(SqlError::new("22003", "number is out of range"));
    }
    let left_align = left_align || width < 0;
    let width = usize::try_from(width.unsigned_abs()).expect("a u32 fits usize");
    let padding = width.saturating_sub(text.chars().count());
    // PostgreSQL builds the result in a StringInfo, whose enlargeStringInfo refuses to
    // grow past its limit with "out of memory" (54000) before text's limit is reached.
    if out.len().saturating_add(text.len()).saturating_add(padding) > TEXT_BYTES_MAX {
        return Err(SqlError::new("54000", "out of memory"));
    }
    if !left_align {
        out.extend(std::iter::repeat_n(' ', padding));
    }
    out.push_str(text);
    if left_align {
        out.extend(std::iter::repeat_n(' ', padding));
    }
    Ok(())
}
