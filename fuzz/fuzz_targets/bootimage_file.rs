#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcd_inject::fuzzing::bootimage_file(data));
