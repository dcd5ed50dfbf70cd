//! An arbitrary 8 KiB image checked as a page read from any tier: `verify` answers
//! corruption or accepts it, never panics, and accepts only an image whose checksum holds.
#![no_main]

use tierdb_common::{Page, PageId, PAGE_SIZE};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The input fills the page, zero-padded.
    let mut page = Page::new_boxed();
    let length = data.len().min(PAGE_SIZE);
    page.as_bytes_mut()[..length].copy_from_slice(&data[..length]);
    if page.verify(page.page_id()).is_ok() {
        assert_eq!(page.stored_checksum(), page.computed_checksum());
    }
    let _ = page.verify(PageId(7));
});
