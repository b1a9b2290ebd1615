//! Compiles the coordinator's control protocol with the vendored `protoc`, so nothing has to be
//! installed by hand.

#[cfg(not(feature = "grpc"))]
fn main() {}

#[cfg(feature = "grpc")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("PROTOC").is_none() {
        // A build script is single-threaded: setting the environment here races with nothing.
        std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    let proto = "proto/hydrofeed/coord/v1/coord.proto";
    println!("cargo:rerun-if-changed={proto}");
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_protos(&[proto], &["proto"])?;
    Ok(())
}
