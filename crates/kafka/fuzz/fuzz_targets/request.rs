//! Fuzz the Kafka request path that runs before the engine: framing, header
//! and body decoding for every API key and version, produce batch checks, and
//! error-response encoding. See `baton_kafka::fuzz_request`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    baton_kafka::fuzz_request(data);
});
