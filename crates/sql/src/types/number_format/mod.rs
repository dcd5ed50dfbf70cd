//! PostgreSQL's number templates: to_char(number, text) and to_number(text, text), with
//! the results of PostgreSQL's formatting.c in the C locale, which tierdb's lc_numeric and
//! lc_monetary always hold (so `D` is `.`, `G` is `,`, `L` is a space and `S` is `+`/`-`).
//!
//! A template is a list of nodes: patterns and literal characters (double-quoted text, or
//! any character that starts no pattern). Reading it also describes the number it wants
//! (`Description`): digits before and after the point, where the sign goes, the flags.
//!
//! | pattern    | to_char writes                                   | to_number reads           |
//! |------------|--------------------------------------------------|---------------------------|
//! | `9`        | a digit, or a space before the first digit       | a digit                   |
//! | `0`        | a digit, a zero before the first digit           | a digit                   |
//! | `.` `D`    | the decimal point                                | the decimal point         |
//! | `,` `G`    | the separator once digits started, else a space  | a separator if present    |
//! | `S`        | the sign next to the digits                      | a sign next to the digits |
//! | `MI` `PL` `SG` | `-`, `+`, or both, where the pattern stands  | the sign there            |
//! | `PR`       | `<digits>` around a negative number              | `<` as a minus            |
//! | `L`        | the currency symbol (a space in the C locale)    | skips a non-digit         |
//! | `RN` `rn`  | Roman numerals, 15 wide unless FM                | 0A000                     |
//! | `TH` `th`  | the ordinal suffix                               | skips two non-digits      |
//! | `V`        | shifts by 10^(the 9s after it)                   | shifts back               |
//! | `EEEE`     | scientific notation (the whole output)           | 0A000                     |
//! | `FM`       | no padding                                       | no optional separators    |
//! | `B` `C` `SP` | nothing                                        | nothing                   |
//!
//! The processors below keep formatting.c's state (the current digit, whether the sign was
//! written, the last relevant digit after the point for FM) because that state, not a
//! simpler rule, decides PostgreSQL's spacing; they are checked against PostgreSQL 15 in
//! tests/slt/number_formats.slt. A NUL in the output ends it, as in PostgreSQL's C string.

use rust_decimal::{Decimal, RoundingStrategy};

use crate::error::{Result, SqlError};

/// rust_decimal keeps at most this many digits after the point; more are written as zeros.
const DECIMAL_SCALE_MAX: usize = 28;
/// Significant digits of a double (C's DBL_DIG) and a float (FLT_DIG): to_char prints no
/// more for a float value.
const FLOAT8_DIGITS: usize = 15;
const FLOAT4_DIGITS: usize = 6;
/// Width of a Roman numeral without FM (the longest, MMMDCCCLXXXVIII, is 15).
const ROMAN_WIDTH: usize = 15;
/// The scale of 10^-n in PostgreSQL's numeric power, which to_number's `V` multiplies by.
const SHIFT_SCALE_MIN: u32 = 16;

/// A number to_char formats, with the type it was given as (each type has its own rules).
#[derive(Clone, Copy, Debug)]
pub enum NumberValue {
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    Numeric(Decimal),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pattern {
    Comma,
    Point,
    Zero,
    Nine,
    Blank,
    Currency,
    LocaleDecimal,
    Exponent,
    FillMode,
    Group,
    Locale,
    Minus,
    Plus,
    Angle,
    RomanUpper,
    RomanLower,
    Sign,
    Spell,
    LocaleSign,
    OrdinalUpper,
    OrdinalLower,
    Shift,
}

/// The patterns in formatting.c's order: where one name starts another, the longer first.
const KEYWORDS: [(&str, Pattern); 36] = [
    (",", Pattern::Comma),
    (".", Pattern::Point),
    ("0", Pattern::Zero),
    ("9", Pattern::Nine),
    ("B", Pattern::Blank),
    ("C", Pattern::Currency),
    ("D", Pattern::LocaleDecimal),
    ("EEEE", Pattern::Exponent),
    ("FM", Pattern::FillMode),
    ("G", Pattern::Group),
    ("L", Pattern::Locale),
    ("MI", Pattern::Minus),
    ("PL", Pattern::Plus),
    ("PR", Pattern::Angle),
    ("RN", Pattern::RomanUpper),
    ("SG", Pattern::Sign),
    ("SP", Pattern::Spell),
    ("S", Pattern::LocaleSign),
    ("TH", Pattern::OrdinalUpper),
    ("V", Pattern::Shift),
    ("b", Pattern::Blank),
    ("c", Pattern::Currency),
    ("d", Pattern::LocaleDecimal),
    ("eeee", Pattern::Exponent),
    ("fm", Pattern::FillMode),
    ("g", Pattern::Group),
    ("l", Pattern::Locale),
    ("mi", Pattern::Minus),
    ("pl", Pattern::Plus),
    ("pr", Pattern::Angle),
    ("rn", Pattern::RomanLower),
    ("sg", Pattern::Sign),
    ("sp", Pattern::Spell),
    ("s", Pattern::LocaleSign),
    ("th", Pattern::OrdinalLower),
    ("v", Pattern::Shift),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Node {
    Pattern(Pattern),
    Literal(char),
}

/// Where `S` puts the sign: before the digits (`S9`) or after them (`9S`, `9.9S`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum LocaleSign {
    #[default]
    None,
    Before,
    After,
}

/// The number a template describes (formatting.c's NUMDesc).
#[derive(Clone, Copy, Debug, Default)]
struct Description {
    digits_before_point: usize,
    digits_after_point: usize,
    locale_sign: LocaleSign,
    /// Digits before the point when `S` was read (an `S` after all of them goes after).
    digits_before_sign: usize,
    /// 9s after `V`: the power of ten to_char multiplies by.
    shift_digits: usize,
    /// Position of the first `0` before the point, counted from 1 (0: none).
    zero_start: usize,
    /// Position of the last `0`, counted from 1 over all digits.
    zero_end: usize,
    point: bool,
    zero: bool,
    blank: bool,
    fill: bool,
    angle: bool,
    minus: bool,
    plus: bool,
    roman: bool,
    shift: bool,
    exponent: bool,
}

fn template_error(message: &str) -> SqlError {
    SqlError::new("42601", message)
}

impl Description {
    fn has_locale_sign(&self) -> bool {
        self.locale_sign != LocaleSign::None
    }

    /// Records one pattern (formatting.c's NUMDesc_prepare), refusing the combinations
    /// PostgreSQL refuses, with its messages.
    fn add(&mut self, pattern: Pattern) -> Result<()> {
        if self.exponent && pattern != Pattern::Exponent {
            return Err(template_error("\"EEEE\" must be the last pattern used"));
        }
        match pattern {
            Pattern::Nine => self.add_nine()?,
            Pattern::Zero => self.add_zero()?,
            Pattern::Blank => {
                if self.digits_before_point == 0 && self.digits_after_point == 0 && !self.zero {
                    self.blank = true;
                }
            }
            Pattern::LocaleDecimal | Pattern::Point => {
                if self.point {
                    return Err(template_error("multiple decimal points"));
                }
                if self.shift {
                    return Err(template_error("cannot use \"V\" and decimal point together"));
                }
                self.point = true;
            }
            Pattern::FillMode => self.fill = true,
            Pattern::LocaleSign => self.add_locale_sign()?,
            Pattern::Minus | Pattern::Plus | Pattern::Sign => self.add_sign(pattern)?,
            Pattern::Angle => {
                if self.has_locale_sign() || self.plus || self.minus {
                    return Err(template_error(
                        "cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together",
                    ));
                }
                self.angle = true;
            }
            Pattern::RomanUpper | Pattern::RomanLower => self.roman = true,
            Pattern::Shift => {
                if self.point {
                    return Err(template_error("cannot use \"V\" and decimal point together"));
                }
                self.shift = true;
            }
            Pattern::Exponent => self.add_exponent()?,
            Pattern::Comma
            | Pattern::Currency
            | Pattern::Group
            | Pattern::Locale
            | Pattern::Spell
            | Pattern::OrdinalUpper
            | Pattern::OrdinalLower => {}
        }
        Ok(())
    }

    fn add_nine(&mut self) -> Result<()> {
        if self.angle {
            return Err(template_error("\"9\" must be ahead of \"PR\""));
        }
        if self.shift {
            self.shift_digits += 1;
        } else if self.point {
            self.digits_after_point += 1;
        } else {
            self.digits_before_point += 1;
        }
        Ok(())
    }

    fn add_zero(&mut self) -> Result<()> {
        if self.angle {
            return Err(template_error("\"0\" must be ahead of \"PR\""));
        }
        if !self.zero && !self.point {
            self.zero = true;
            self.zero_start = self.digits_before_point + 1;
        }
        if self.point {
            self.digits_after_point += 1;
        } else {
            self.digits_before_point += 1;
        }
        self.zero_end = self.digits_before_point + self.digits_after_point;
        Ok(())
    }

    fn add_locale_sign(&mut self) -> Result<()> {
        if self.has_locale_sign() {
            return Err(template_error("cannot use \"S\" twice"));
        }
        if self.plus || self.minus || self.angle {
            return Err(template_error(
                "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
            ));
        }
        if self.point {
            self.locale_sign = LocaleSign::After;
        } else {
            self.locale_sign = LocaleSign::Before;
            self.digits_before_sign = self.digits_before_point;
        }
        Ok(())
    }

    fn add_sign(&mut self, pattern: Pattern) -> Result<()> {
        if self.has_locale_sign() {
            let name = match pattern {
                Pattern::Minus => "MI",
                Pattern::Plus => "PL",
                _ => "SG",
            };
            return Err(template_error(&format!("cannot use \"S\" and \"{name}\" together")));
        }
        self.minus |= matches!(pattern, Pattern::Minus | Pattern::Sign);
        self.plus |= matches!(pattern, Pattern::Plus | Pattern::Sign);
        Ok(())
    }

    fn add_exponent(&mut self) -> Result<()> {
        if self.exponent {
            return Err(template_error("cannot use \"EEEE\" twice"));
        }
        if self.blank
            || self.fill
            || self.has_locale_sign()
            || self.angle
            || self.minus
            || self.plus
            || self.roman
            || self.shift
        {
            return Err(SqlError::new(
                "42601",
                "\"EEEE\" is incompatible with other formats: \"EEEE\" may only be used together with digit and decimal point patterns.",
            ));
        }
        self.exponent = true;
        Ok(())
    }
}

/// Reads a template into its nodes and the number it describes.
fn compile(template: &str) -> Result<(Vec<Node>, Description)> {
    let mut nodes = Vec::new();
    let mut description = Description::default();
    let mut rest = template;
    while let Some(first) = rest.chars().next() {
        if let Some((name, pattern)) =
            KEYWORDS.iter().find(|(name, _)| name.starts_with(first) && rest.starts_with(name))
        {
            description.add(*pattern)?;
            nodes.push(Node::Pattern(*pattern));
            rest = &rest[name.len()..];
        } else if first == '"' {
            rest = quoted_literal(&rest[1..], &mut nodes);
        } else {
            // Outside quotes a backslash only quotes a double quote.
            if first == '\\' && rest[1..].starts_with('"') {
                rest = &rest[1..];
            }
            let character = rest.chars().next().expect("the loop saw a character");
            nodes.push(Node::Literal(character));
            rest = &rest[character.len_utf8()..];
        }
    }
    Ok((nodes, description))
}

/// Pushes the characters of a double-quoted literal (a backslash quotes the next one) and
/// returns the text after its closing quote.
fn quoted_literal<'a>(text: &'a str, nodes: &mut Vec<Node>) -> &'a str {
    let mut characters = text.char_indices().peekable();
    while let Some((index, character)) = characters.next() {
        match character {
            '"' => return &text[index + 1..],
            '\\' => match characters.next() {
                Some((_, quoted)) => nodes.push(Node::Literal(quoted)),
                None => nodes.push(Node::Literal('\\')),
            },
            other => nodes.push(Node::Literal(other)),
        }
    }
    ""
}

/// to_char(number, template). An empty template gives an empty text.
pub fn format_number_pattern(value: NumberValue, template: &str) -> Result<String> {
    if template.is_empty() {
        return Ok(String::new());
    }
    let (nodes, mut description) = compile(template)?;
    let digits = if description.roman {
        Digits::plain(roman(value.roman_integer()?).into_bytes(), 0)
    } else if description.exponent {
        return Ok(value.scientific(&description));
    } else {
        value.digits(&mut description)?
    };
    ToChar::new(description, digits).run(&nodes)
}

/// The digits to_char writes: the number's text without its sign, the sign, and the
/// spaces the template has before the first digit.
struct Digits {
    text: Vec<u8>,
    sign: u8,
    spaces_before: usize,
}

impl Digits {
    fn plain(text: Vec<u8>, sign: u8) -> Digits {
        Digits { text, sign, spaces_before: 0 }
    }

    /// Fits `text` (digits, maybe a point and more digits) to the template: spaces before
    /// it when it has fewer digits before the point, `#`s when it has more.
    fn fitted(text: String, sign: u8, description: &Description) -> Digits {
        let before = description.digits_before_point;
        let length = text.find('.').unwrap_or(text.len());
        if length > before {
            let mut hashes = vec![b'#'; before + description.digits_after_point + 1];
            hashes[before] = b'.';
            return Digits::plain(hashes, sign);
        }
        Digits { text: text.into_bytes(), sign, spaces_before: before - length }
    }
}

impl NumberValue {
    /// The integer RN writes: rounded; a float out of range gives i32::MAX (no numeral),
    /// a bigint or numeric one is an error (PostgreSQL 15 converts those with int84 and
    /// numeric_int4).
    fn roman_integer(self) -> Result<i32> {
        let out_of_range = || SqlError::out_of_range("integer");
        Ok(match self {
            NumberValue::Int4(value) => value,
            NumberValue::Int8(value) => i32::try_from(value).map_err(|_| out_of_range())?,
            NumberValue::Float4(value) => float_to_i32(f64::from(value).round_ties_even()),
            NumberValue::Float8(value) => float_to_i32(value.round_ties_even()),
            NumberValue::Numeric(value) => {
                let rounded =
                    value.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
                rounded.trunc().to_string().parse().map_err(|_| out_of_range())?
            }
        })
    }

    /// The EEEE output: a space or minus, one digit, `digits` more after the point, and a
    /// signed exponent of at least two digits.
    fn scientific(self, description: &Description) -> String {
        let digits = description.digits_after_point;
        let before = description.digits_before_point;
        let text = match self {
            NumberValue::Int4(value) => c_scientific(f64::from(value), before, digits),
            NumberValue::Float4(value) => c_scientific(f64::from(value), before, digits),
            NumberValue::Float8(value) => c_scientific(value, before, digits),
            NumberValue::Int8(value) => numeric_scientific(Decimal::from(value), digits),
            NumberValue::Numeric(value) => numeric_scientific(value, digits),
        };
        match text.strip_prefix('+') {
            Some(positive) => format!(" {positive}"),
            None if text.starts_with('-') => text,
            None => format!(" {text}"),
        }
    }

    /// The digits of the value multiplied by V's power of ten and rounded to the
    /// template's digits after the point.
    fn digits(self, description: &mut Description) -> Result<Digits> {
        let shift = description.shift_digits;
        if description.shift {
            description.digits_before_point += shift;
        }
        match self {
            NumberValue::Int4(value) => {
                // PostgreSQL converts the power of ten to an integer and multiplies in 32
                // bits, each step checked.
                let shifted = if description.shift {
                    10i64
                        .checked_pow(exponent_u32(shift))
                        .and_then(|factor| i32::try_from(factor).ok())
                        .and_then(|factor| value.checked_mul(factor))
                        .ok_or_else(|| SqlError::out_of_range("integer"))?
                } else {
                    value
                };
                Ok(integer_digits(i64::from(shifted), description))
            }
            NumberValue::Int8(value) => {
                let shifted = if description.shift {
                    10i64
                        .checked_pow(exponent_u32(shift))
                        .and_then(|factor| value.checked_mul(factor))
                        .ok_or_else(|| SqlError::out_of_range("bigint"))?
                } else {
                    value
                };
                Ok(integer_digits(shifted, description))
            }
            NumberValue::Float4(value) => {
                // PostgreSQL computes the power in double precision and multiplies in single.
                #[allow(clippy::cast_possible_truncation)]
                let factor = 10f64.powi(exponent_i32(shift)) as f32;
                let shifted = if description.shift { value * factor } else { value };
                Ok(float_digits(f64::from(shifted), FLOAT4_DIGITS, description))
            }
            NumberValue::Float8(value) => {
                let shifted =
                    if description.shift { value * 10f64.powi(exponent_i32(shift)) } else { value };
                Ok(float_digits(shifted, FLOAT8_DIGITS, description))
            }
            NumberValue::Numeric(value) => numeric_digits(value, description),
        }
    }
}

fn exponent_u32(digits: usize) -> u32 {
    u32::try_from(digits).unwrap_or(u32::MAX)
}

fn exponent_i32(digits: usize) -> i32 {
    i32::try_from(digits).unwrap_or(i32::MAX)
}

fn float_to_i32(value: f64) -> i32 {
    if value.is_finite() && value >= f64::from(i32::MIN) && value < -f64::from(i32::MIN) {
        #[allow(clippy::cast_possible_truncation)] // In range and integral: checked above.
        let integer = value as i32;
        integer
    } else {
        i32::MAX
    }
}

fn integer_digits(value: i64, description: &Description) -> Digits {
    let sign = if value < 0 { b'-' } else { b'+' };
    let mut text = value.unsigned_abs().to_string();
    if description.digits_after_point > 0 {
        text.push('.');
        text.extend(std::iter::repeat_n('0', description.digits_after_point));
    }
    Digits::fitted(text, sign, description)
}

/// A float printed as C's `%.*f` does with as many digits after the point as the template
/// asks, but no more significant digits than the type holds.
fn float_digits(value: f64, significant: usize, description: &mut Description) -> Digits {
    let before = c_fixed(value.abs(), 0).len();
    if before >= significant {
        description.digits_after_point = 0;
    } else if before + description.digits_after_point > significant {
        description.digits_after_point = significant - before;
    }
    let text = c_fixed(value, description.digits_after_point);
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (b'-', rest.to_string()),
        None => (b'+', text),
    };
    Digits::fitted(unsigned, sign, description)
}

/// C's `%.*f` as PostgreSQL's snprintf prints it (NaN and Infinity by name).
fn c_fixed(value: f64, digits: usize) -> String {
    if value.is_nan() {
        "NaN".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        format!("{value:.digits$}")
    }
}

/// C's `%+.*e`: a sign, the significand and an exponent of at least two digits; NaN and
/// infinities fill the width with `#`.
fn c_scientific(value: f64, before: usize, digits: usize) -> String {
    if !value.is_finite() {
        let mut text = vec![b'#'; before + digits + 6];
        text[0] = b' ';
        text[before + 1] = b'.';
        return String::from_utf8(text).expect("ASCII");
    }
    let rust = format!("{value:+.digits$e}");
    let (significand, exponent) = rust.split_once('e').expect("an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    format!("{significand}e{exponent:+03}")
}

/// numeric_out_sci: the exponent of the value's first digit, and the value divided by that
/// power of ten rounded to `digits` after the point (which can print 10.00 for 9.999).
fn numeric_scientific(value: Decimal, digits: usize) -> String {
    let exponent = if value.is_zero() {
        0
    } else {
        let mantissa_digits = value.mantissa().unsigned_abs().to_string().len();
        i64::try_from(mantissa_digits).expect("at most 29 digits") - 1 - i64::from(value.scale())
    };
    let significand = if value.is_zero() {
        Decimal::ZERO
    } else {
        let scale = exponent_u32(value.mantissa().unsigned_abs().to_string().len() - 1);
        Decimal::from_i128_with_scale(value.mantissa(), scale)
    };
    let text = rounded_text(significand, digits);
    format!("{text}e{exponent:+03}")
}

/// The value rounded half away from zero to `digits` after the point, with exactly that
/// many (zeros past rust_decimal's 28 digits); a rounded zero has no sign.
fn rounded_text(value: Decimal, digits: usize) -> String {
    let scale = exponent_u32(digits.min(DECIMAL_SCALE_MAX));
    let mut rounded = value.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    rounded.rescale(scale);
    if rounded.is_zero() {
        rounded.set_sign_positive(true);
    }
    let mut text = rounded.to_string();
    if digits > DECIMAL_SCALE_MAX {
        text.extend(std::iter::repeat_n('0', digits - DECIMAL_SCALE_MAX));
    }
    text
}

fn numeric_digits(value: Decimal, description: &Description) -> Result<Digits> {
    let shifted = if description.shift {
        // 10^28 is the largest power of ten a rust_decimal holds.
        let factor = 10i128
            .checked_pow(exponent_u32(description.shift_digits))
            .filter(|_| description.shift_digits <= DECIMAL_SCALE_MAX)
            .map(|factor| Decimal::from_i128_with_scale(factor, 0))
            .ok_or_else(|| SqlError::out_of_range("numeric"))?;
        value.checked_mul(factor).ok_or_else(|| SqlError::out_of_range("numeric"))?
    } else {
        value
    };
    let text = rounded_text(shifted, description.digits_after_point);
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (b'-', rest.to_string()),
        None => (b'+', text),
    };
    Ok(Digits::fitted(unsigned, sign, description))
}

/// Roman numerals of 1 to 3,999; fifteen `#` for anything else.
fn roman(value: i32) -> String {
    const ONES: [&str; 9] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"];
    const TENS: [&str; 9] = ["X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"];
    const HUNDREDS: [&str; 9] = ["C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"];
    if !(1..=3999).contains(&value) {
        return "#".repeat(ROMAN_WIDTH);
    }
    let value = usize::try_from(value).expect("positive");
    let mut text = "M".repeat(value / 1000);
    for (digit, names) in
        [(value / 100 % 10, HUNDREDS), (value / 10 % 10, TENS), (value % 10, ONES)]
    {
        if digit > 0 {
            text.push_str(names[digit - 1]);
        }
    }
    text
}

/// The ordinal suffix of the number's last digits (`th` for 11 to 13), which to_char's date
/// patterns share; 22P02 when the text does not end in a digit (NaN).
fn ordinal_suffix(number: &[u8], upper: bool) -> Result<&'static str> {
    let digit = |byte: Option<&u8>| {
        byte.filter(|byte| byte.is_ascii_digit()).map(|byte| i64::from(byte - b'0'))
    };
    let Some(last) = digit(number.last()) else {
        return Err(SqlError::new(
            "22P02",
            format!("\"{}\" is not a number", String::from_utf8_lossy(number)),
        ));
    };
    let tens = number.len().checked_sub(2).and_then(|index| digit(number.get(index)));
    Ok(super::datetime_format::ordinal_suffix(tens.unwrap_or(0) * 10 + last, upper))
}

mod to_char;
mod to_number;

use to_char::ToChar;
pub use to_number::parse_number_pattern;
