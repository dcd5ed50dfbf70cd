//! An arbitrary B+tree node payload: `Node::open` rejects it or every accessor works on it
//! without panicking; `NodeMut::open` and a change (which runs the overlap check first)
//! likewise.
#![no_main]

use tierdb_access::{Node, NodeMut};
use tierdb_common::PAGE_PAYLOAD_SIZE;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // A node is always a whole page payload (Node::open asserts it): the input fills one,
    // zero-padded.
    let mut payload = vec![0u8; PAGE_PAYLOAD_SIZE];
    let length = data.len().min(PAGE_PAYLOAD_SIZE);
    payload[..length].copy_from_slice(&data[..length]);
    let data = payload.as_slice();
    if let Ok(node) = Node::open(data) {
        for index in 0..node.count() {
            let key = node.key(index);
            let _ = node.search(key);
            if node.is_leaf() {
                let _ = node.value(index);
            } else {
                let _ = node.child_for(key);
            }
        }
        let _ = (node.high_key(), node.free_bytes(), node.used_bytes());
    }
    let mut copy = data.to_vec();
    if let Ok(mut node) = NodeMut::open(&mut copy) {
        if node.view().is_leaf() {
            let _ = node.insert_leaf(0, b"fuzz", b"value");
        }
        node.compact();
    }
});
