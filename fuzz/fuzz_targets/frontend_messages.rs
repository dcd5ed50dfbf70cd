//! Arbitrary client bytes through the server's message framing and layout checks and then
//! pgwire's decoder (`tierdb_server::fuzzing::frontend_messages`): nothing may panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tierdb_server::fuzzing::frontend_messages(data);
});
