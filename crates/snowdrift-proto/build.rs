//! Compiles `proto/snowdrift.proto` (at the repository root) into the gRPC messages, server
//! and client with protox, a protobuf compiler in Rust, so building needs no `protoc`; also
//! writes the encoded descriptor set that the server's reflection service serves.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "grpc")]
    grpc()?;
    Ok(())
}

#[cfg(feature = "grpc")]
fn grpc() -> Result<(), Box<dyn std::error::Error>> {
    use std::path::PathBuf;

    use protox::prost::Message;

    let proto_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let proto = proto_dir.join("snowdrift.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&proto_dir])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("snowdrift_descriptor.bin"),
        fds.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        // Clients bring their own channel (tonic's transport is not a dependency here; the
        // server's tests, the CLI and the client crate use `tonic::transport::Channel`).
        .build_transport(false)
        .compile_fds(fds)?;
    Ok(())
}
