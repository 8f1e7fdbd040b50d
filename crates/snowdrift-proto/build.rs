//! Compiles `proto/snowdrift.proto` (in this crate, so the packaged crate builds alone) into
//! the gRPC messages, server and client with protox, a protobuf compiler in Rust, so building
//! needs no `protoc`; also writes the encoded descriptor set that the server's reflection
//! service serves.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "grpc")]
    grpc()?;
    Ok(())
}

#[cfg(feature = "grpc")]
fn grpc() -> Result<(), Box<dyn std::error::Error>> {
    use std::path::PathBuf;

    use protox::prost::Message;

    let proto_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    let proto = proto_dir.join("snowdrift.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&proto_dir])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("snowdrift_descriptor.bin"),
        fds.encode_to_vec(),
    )?;
    // The messages and the client, with prost's codec: a reply that does not decode is
    // INTERNAL there, a server's fault that a client may retry elsewhere.
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        // Clients bring their own channel (tonic's transport is not a dependency here; the
        // server's tests, the CLI and the client crate use `tonic::transport::Channel`).
        .build_transport(false)
        .compile_fds(fds.clone())?;
    // The server alone, over the messages above, with a codec that answers a request that
    // does not decode with INVALID_ARGUMENT: the caller's fault, not the server's.
    let server_dir = out_dir.join("server");
    std::fs::create_dir_all(&server_dir)?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(false)
        .build_transport(false)
        .extern_path(".snowdrift.v1", "crate::grpc")
        .codec_path("crate::grpc::StrictCodec")
        .out_dir(&server_dir)
        .compile_fds(fds)?;
    Ok(())
}
