//! Fuzz every JSON body of the HTTP API as its route judges it, before the
//! engine: push, transaction, ack, ack batch, KV, timers, payload checks.
//! See `baton_http::fuzzing::judge_bodies`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    baton_http::fuzzing::judge_bodies(data);
});
