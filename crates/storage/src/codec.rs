//! Little-endian byte encoding helpers for the on-disk formats, with bounds-checked reads that
//! turn truncation into an error instead of a panic.

pub(crate) struct Writer {
    pub bytes: Vec<u8>,
}

impl Writer {
    pub fn with_capacity(capacity: usize) -> Writer {
        Writer { bytes: Vec::with_capacity(capacity) }
    }
    pub fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }
    pub fn u32(&mut self, value: u32) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }
    pub fn u64(&mut self, value: u64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }
    pub fn raw(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
    }
    /// LEB128: 7 bits a byte, low bits first, bit 7 set on every byte but the last.
    pub fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes.push(value.to_le_bytes()[0] | 0x80);
            value >>= 7;
        }
        self.bytes.push(value.to_le_bytes()[0]);
    }
    /// A signed value as a zigzag varint (0, -1, 1, -2, ... as 0, 1, 2, 3, ...): small
    /// magnitudes of either sign take one byte.
    pub fn signed_varint(&mut self, value: i64) {
        self.varint(u64::from_le_bytes(((value << 1) ^ (value >> 63)).to_le_bytes()));
    }
    /// Appends the CRC32C of everything written so far.
    pub fn seal(&mut self) {
        let checksum = crc32c::crc32c(&self.bytes);
        self.u32(checksum);
    }
}

/// Reads fields in order; every read fails cleanly past the end.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

/// Why a decode failed; the caller adds the file name.
pub(crate) type DecodeResult<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, position: 0 }
    }
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }
    pub fn take(&mut self, length: usize) -> DecodeResult<&'a [u8]> {
        if self.remaining() < length {
            return Err(format!(
                "truncated at offset={} wanted={length} remaining={}",
                self.position,
                self.remaining()
            ));
        }
        let slice = &self.bytes[self.position..self.position + length];
        self.position += length;
        Ok(slice)
    }
    pub fn u8(&mut self) -> DecodeResult<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> DecodeResult<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    pub fn u32(&mut self) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    pub fn u64(&mut self) -> DecodeResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// Reads a `Writer::varint`; more than 10 bytes, or bits beyond 64, is an error.
    pub fn varint(&mut self) -> DecodeResult<u64> {
        let mut value = 0u64;
        for index in 0..10u32 {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            if index == 9 && bits > 1 {
                return Err(format!("varint overflows 64 bits at offset={}", self.position));
            }
            value |= bits << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("varint longer than 10 bytes at offset={}", self.position))
    }
    pub fn signed_varint(&mut self) -> DecodeResult<i64> {
        let zigzag = self.varint()?;
        let magnitude = i64::from_le_bytes((zigzag >> 1).to_le_bytes());
        Ok(if zigzag & 1 == 0 { magnitude } else { !magnitude })
    }
    pub fn expect_magic(&mut self, magic: &[u8]) -> DecodeResult<()> {
        let found = self.take(magic.len())?;
        if found != magic {
            return Err(format!(
                "bad magic expected={} found={}",
                String::from_utf8_lossy(magic),
                String::from_utf8_lossy(found).escape_debug()
            ));
        }
        Ok(())
    }
}

/// Checks that `bytes` ends with the CRC32C of what precedes it; returns the covered part.
pub(crate) fn verify_sealed(bytes: &[u8]) -> DecodeResult<&[u8]> {
    if bytes.len() < 4 {
        return Err(format!("too short for a checksum length={}", bytes.len()));
    }
    let (body, trailer) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(trailer.try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(format!("checksum mismatch stored={stored:#010x} computed={computed:#010x}"));
    }
    Ok(body)
}

pub(crate) fn usize_to_u32(value: usize) -> u32 {
    u32::try_from(value).expect("count fits in u32 by construction")
}

pub(crate) fn usize_to_u64(value: usize) -> u64 {
    u64::try_from(value).expect("usize fits in u64")
}

pub(crate) fn u64_to_usize(value: u64) -> usize {
    usize::try_from(value).expect("64-bit platform")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn varints_round_trip(unsigned in any::<u64>(), signed in any::<i64>(), small in -64i64..64) {
            let mut writer = Writer::with_capacity(32);
            writer.varint(unsigned);
            writer.signed_varint(signed);
            writer.signed_varint(small);
            let mut reader = Reader::new(&writer.bytes);
            prop_assert_eq!(reader.varint().unwrap(), unsigned);
            prop_assert_eq!(reader.signed_varint().unwrap(), signed);
            prop_assert_eq!(reader.signed_varint().unwrap(), small);
            prop_assert_eq!(reader.remaining(), 0);
            // A magnitude below 64 takes one byte.
            prop_assert_eq!(writer.bytes.last().map(|byte| byte & 0x80), Some(0));
        }
    }

    #[test]
    fn overlong_or_overflowing_varints_are_errors() {
        let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Reader::new(&overflow).varint().unwrap_err().contains("overflows"));
        let overlong = [0x80; 11];
        assert!(Reader::new(&overlong).varint().unwrap_err().contains("longer than 10"));
        assert!(Reader::new(&[0x80]).varint().unwrap_err().contains("truncated"));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&max).varint().unwrap(), u64::MAX);
    }
}
