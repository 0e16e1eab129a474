/// Copying an object within the bucket (`vigil archive adopt` moves a node's files into its
/// folder: copy, check, delete).
extension S3Client {
    /// CopyObject within the bucket, its metadata with it (S3 copies up to 5 GiB in one request;
    /// an object larger is refused by the server, and said so). An `<Error>` answered with 200,
    /// as S3 may do for a copy, is a failure.
    public func copyObject(from source: String, to key: String) async throws(S3Error) {
        let label = describe("PUT", key, "a copy of \(source)")
        let copySource = "/" + SigV4Signer.uriEncode(endpoint.bucket, keepSlash: false) + "/" + SigV4Signer.uriEncode(source, keepSlash: true)
        _ = try await xmlCall(.PUT, key: key, query: [], headers: [("x-amz-copy-source", copySource), ("x-amz-metadata-directive", "COPY")], label: label)
    }
}
