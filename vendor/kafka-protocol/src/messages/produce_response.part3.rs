// Part 3 of produce_response.rs, split by split_long_files.py at item boundaries; generated code.
impl Message for TopicProduceResponse {
    const VERSIONS: VersionRange = VersionRange { min: 3, max: 13 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}

impl HeaderVersion for ProduceResponse {
    fn header_version(version: i16) -> i16 {
        if version >= 9 {
            1
        } else {
            0
        }
    }
}
