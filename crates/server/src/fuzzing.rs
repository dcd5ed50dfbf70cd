//! Entry point for the fuzz target `frontend_messages` in `fuzz/` (cargo feature `fuzzing`):
//! arbitrary client bytes through the framing and layout checks of frontend.rs, and every
//! frame they pass through pgwire's decoder, as the connection loop does. Neither may panic:
//! the checks must leave pgwire nothing it could panic on.

use bytes::BytesMut;
use pgwire::messages::{DecodeContext, PgWireFrontendMessage, ProtocolVersion};

use crate::frontend::{next_frame, Frame, Phase};

/// The message size limit the target runs with (small, so that the fuzzer reaches it).
const FUZZ_MESSAGE_BYTES_MAX: usize = 1 << 16;

/// The first byte picks the connection phase; the rest is the client's byte stream.
pub fn frontend_messages(data: &[u8]) {
    let Some((selector, stream)) = data.split_first() else { return };
    let phase = match selector % 4 {
        0 => Phase::Startup,
        1 => Phase::Authentication { first_response: true },
        2 => Phase::Authentication { first_response: false },
        _ => Phase::Ready,
    };
    let mut buffer = BytesMut::from(stream);
    while let Ok(Some(frame)) = next_frame(&mut buffer, phase, FUZZ_MESSAGE_BYTES_MAX) {
        let Frame::Valid(mut bytes) = frame else { continue };
        let mut context = DecodeContext::new(ProtocolVersion::default());
        context.awaiting_frontend_ssl = false;
        context.awaiting_frontend_startup = phase == Phase::Startup;
        let decoded = PgWireFrontendMessage::decode(&mut bytes, &context);
        assert!(!matches!(decoded, Ok(None)), "a checked frame is a whole message");
        if let Ok(Some(PgWireFrontendMessage::PasswordMessageFamily(message))) = decoded {
            // What pgwire's SASL exchange does with the message in this phase.
            if phase == (Phase::Authentication { first_response: true }) {
                let _ = message.into_sasl_initial_response();
            } else {
                let _ = message.into_sasl_response();
            }
        }
    }
}
