#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcd_inject::fuzzing::image_reference(data));
