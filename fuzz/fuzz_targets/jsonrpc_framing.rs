//! Fuzz target: the newline-delimited JSON-RPC framing the stdio transport reads, fed
//! arbitrary bytes in arbitrary chunks. Invariant: the decoder never panics, never loops, and
//! every frame it yields is a message of the client-to-server protocol.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::async_rw::JsonRpcMessageCodec;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let mut codec = JsonRpcMessageCodec::<ClientJsonRpcMessage>::default();
    let mut buffer = BytesMut::new();
    // The first byte picks the chunk size, so frames are split at every possible place.
    let chunk = usize::from(data.first().copied().unwrap_or(1)).max(1);
    for piece in data.chunks(chunk) {
        buffer.extend_from_slice(piece);
        let mut frames = 0;
        while let Ok(Some(_message)) = codec.decode(&mut buffer) {
            frames += 1;
            assert!(frames <= data.len() + 1, "decoder yields more frames than input lines");
        }
    }
    let _ = codec.decode_eof(&mut buffer);
});
