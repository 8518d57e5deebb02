//! Certificates for tests, made by `openssl` as an operator would: a CA, and certificates it
//! signs for named addresses (servers) or for nobody in particular (clients). `name.pem` and
//! `name.key` in the directory given.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

fn openssl(args: &[&str]) -> Result<()> {
    let out = Command::new("openssl").args(args).output().context("running openssl (scripts/setup installs it)")?;
    if !out.status.success() {
        bail!("openssl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// A CA (P-256, valid two days) in a directory.
pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// Makes the CA: `ca.pem`, `ca.key` (and `dir` if it is not there).
    pub fn new(dir: &Path) -> Result<Pki> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let pki = Pki { dir: dir.to_path_buf() };
        let (key, pem) = (pki.key("ca"), pki.pem("ca"));
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=loupe test CA",
            "-keyout",
            s(&key),
            "-out",
            s(&pem),
        ])?;
        Ok(pki)
    }

    pub fn pem(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pem"))
    }

    pub fn key(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.key"))
    }

    /// A certificate for `cn`, signed by the CA, valid for `sans` (`IP:10.0.0.1`,
    /// `DNS:localhost`; none for a client certificate).
    pub fn issue(&self, name: &str, cn: &str, sans: &[&str]) -> Result<()> {
        let (csr, ext) = (self.dir.join(format!("{name}.csr")), self.dir.join(format!("{name}.ext")));
        let (key, pem) = (self.key(name), self.pem(name));
        openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            &format!("/CN={cn}"),
            "-keyout",
            s(&key),
            "-out",
            s(&csr),
        ])?;
        let usage = if sans.is_empty() {
            "extendedKeyUsage=clientAuth".to_string()
        } else {
            format!("subjectAltName={}", sans.join(","))
        };
        std::fs::write(&ext, usage + "\n")?;
        openssl(&[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            s(&csr),
            "-CA",
            s(&self.pem("ca")),
            "-CAkey",
            s(&self.key("ca")),
            "-CAcreateserial",
            "-extfile",
            s(&ext),
            "-out",
            s(&pem),
        ])
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}
