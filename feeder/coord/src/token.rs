//! The per-job shared secret every control call carries as `authorization: Bearer <token>`.
//!
//! A token is 32 random bytes in hex, generated per job and written to a file readable by
//! the owner only (0600), or taken from `HYDROFEED_TOKEN`. It keeps other users' processes on
//! a shared cluster from taking leases or reading state; it is not a substitute for TLS on an
//! untrusted network.

use std::io::Write;
use std::path::Path;

use crate::{Error, Result};

/// Environment variable holding the token.
pub const TOKEN_ENV: &str = "HYDROFEED_TOKEN";

/// A job's shared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// A fresh random token (32 bytes of `rand`'s thread generator, a CSPRNG seeded by the
    /// OS, in hex).
    pub fn generate() -> Result<Self> {
        use rand::RngCore;
        let mut b = [0u8; 32];
        rand::rng().fill_bytes(&mut b);
        Ok(Token(b.iter().map(|x| format!("{x:02x}")).collect()))
    }

    /// A token from text (trimmed); refuses empty or non-printable ones.
    pub fn new(s: &str) -> Result<Self> {
        let t = s.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::InvalidArgument(
                "token must be non-empty printable ASCII without spaces".into(),
            ));
        }
        Ok(Token(t.to_string()))
    }

    /// The token from `HYDROFEED_TOKEN`, if set.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var(TOKEN_ENV) {
            Ok(s) => Token::new(&s).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Reads a token file.
    pub fn read(path: &Path) -> Result<Self> {
        let s = std::fs::read_to_string(path).map_err(|e| Error::Io {
            loc: hydrofeed_error::Location {
                path: path.display().to_string(),
                ..Default::default()
            },
            source: e,
        })?;
        Token::new(&s)
    }

    /// Writes the token to `path`, created with mode 0600 (replacing an existing file).
    pub fn write(&self, path: &Path) -> Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let io = |e| Error::Io {
            loc: hydrofeed_error::Location {
                path: path.display().to_string(),
                ..Default::default()
            },
            source: e,
        };
        let _ = std::fs::remove_file(path);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        f.write_all(self.0.as_bytes()).map_err(io)?;
        f.write_all(b"\n").map_err(io)
    }

    /// The secret text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison with a presented value (no early exit on the first
    /// differing byte, so timing does not reveal a prefix).
    pub fn matches(&self, presented: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), presented.as_bytes());
        let mut diff = (a.len() ^ b.len()) as u8 | u8::from(a.len() != b.len());
        for (i, x) in a.iter().enumerate() {
            diff |= x ^ b.get(i).copied().unwrap_or(0);
        }
        diff == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn file_is_private_and_round_trips() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("token");
        let t = Token::generate().unwrap();
        assert_eq!(t.as_str().len(), 64);
        t.write(&p).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(Token::read(&p).unwrap(), t);
        assert!(t.matches(t.as_str()));
        assert!(!t.matches(&t.as_str()[..63]));
        assert!(!t.matches(""));
        assert!(Token::new(" ").is_err());
        assert_ne!(Token::generate().unwrap(), t);
    }
}
