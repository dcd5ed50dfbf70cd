//! Page encoding round-trips, and every single-bit flip or wrong identity is rejected.

use proptest::prelude::*;
use tierdb_common::{Lsn, Page, PageCorruption, PageId, PageType, SegmentId, PAGE_SIZE};

proptest! {
    #[test]
    fn sealed_page_round_trips(
        page_id in 1u64..u64::MAX,
        lsn in any::<u64>(),
        version in any::<u64>(),
        type_code in any::<u8>(),
        payload_seed in any::<u64>(),
    ) {
        let mut page = Page::new_initialized(PageId(page_id), PageType::from_code(type_code));
        let mut rng = tierdb_common::SplitMix64::new(payload_seed);
        for byte in page.payload_mut() {
            *byte = u8::try_from(rng.below(256)).unwrap();
        }
        page.set_lsn(Lsn(lsn));
        page.set_image_version(SegmentId(version));
        page.seal();

        let mut copy = Page::new_boxed();
        copy.as_bytes_mut().copy_from_slice(page.as_bytes());
        prop_assert!(copy.verify_version(PageId(page_id), SegmentId(version)).is_ok());
        prop_assert_eq!(copy.lsn(), Lsn(lsn));
        prop_assert_eq!(copy.page_type().code(), type_code);
        prop_assert_eq!(copy.payload(), page.payload());
    }

    #[test]
    fn any_bit_flip_is_detected(bit in 0usize..PAGE_SIZE * 8) {
        let mut page = Page::new_initialized(PageId(42), PageType::Raw);
        page.payload_mut()[100] = 7;
        page.seal();
        page.as_bytes_mut()[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(page.verify(PageId(42)).is_err());
    }
}

#[test]
fn wrong_page_and_wrong_version_are_rejected() {
    let mut page = Page::new_initialized(PageId(5), PageType::Raw);
    page.set_image_version(SegmentId(9));
    page.seal();
    assert_eq!(
        page.verify(PageId(6)),
        Err(PageCorruption::PageId { expected: PageId(6), found: PageId(5) })
    );
    assert_eq!(
        page.verify_version(PageId(5), SegmentId(8)),
        Err(PageCorruption::ImageVersion { expected: SegmentId(8), found: SegmentId(9) })
    );
    assert!(page.verify_version(PageId(5), SegmentId(9)).is_ok());
}

#[test]
fn page_is_aligned_for_direct_io() {
    let page = Page::new_boxed();
    let address = std::ptr::from_ref::<Page>(&page) as usize;
    assert_eq!(address % 4096, 0);
}
