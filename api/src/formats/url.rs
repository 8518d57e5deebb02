//! URLs as logs and error messages show them: without the credentials a URL may carry
//! (`nats://user:password@host`, `nats://token@host`, `https://user:pass@host`). A NATS URL given
//! with `--nats` was logged verbatim at start and in every connection error.

/// `urls` (comma-separated, as `--nats` takes several) with each one's user information
/// replaced by `***`.
pub fn redacted(urls: &str) -> String {
    let one = |url: &str| -> String {
        let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        match rest[..authority_end].rfind('@') {
            Some(at) => format!("{scheme}://***{}", &rest[at..]),
            None => url.to_string(),
        }
    };
    urls.split(',').map(one).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_in_urls_are_never_shown() {
        for (url, shown) in [
            ("nats://user:s3cret@10.0.0.1:4222", "nats://***@10.0.0.1:4222"),
            ("tls://tok3n@nats.example", "tls://***@nats.example"),
            ("nats://a:b@h1:4222,nats://h2:4222", "nats://***@h1:4222,nats://h2:4222"),
            ("https://u:p@web-12:7878/api", "https://***@web-12:7878/api"),
            ("nats://h:4222/path@x", "nats://h:4222/path@x"),
            ("http://h:1?x=a@b", "http://h:1?x=a@b"),
            ("127.0.0.1:4222", "127.0.0.1:4222"),
        ] {
            assert_eq!(super::redacted(url), shown);
        }
    }
}
