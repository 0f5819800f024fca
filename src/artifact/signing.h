#pragma once
/// Hashing and Ed25519 signing of artifacts (libsodium). Keys live in files holding one line of
/// lower-case hex: 64 bytes for a secret key, 32 bytes for a public key.
#include <array>
#include <cstddef>
#include <span>
#include <string>

#include "artifact/format.h"

namespace yoloc::artifact {

using Digest = std::array<std::byte, kDigestSize>;
using Signature = std::array<std::byte, kSignatureSize>;
using PublicKey = std::array<std::byte, 32>;
using SecretKey = std::array<std::byte, 64>;

/// SHA-256 of `data`.
Digest sha256(std::span<const std::byte> data);

/// A new random key pair, written as hex to `secret_path` (mode 0600) and `public_path`. Raises
/// a UserError, writing nothing, when either file exists.
void generate_key_pair(const std::string& secret_path, const std::string& public_path);
/// Reads a secret key file; raises a UserError naming the file when it is missing or malformed.
SecretKey load_secret_key(const std::string& path);
/// Reads a public key file; raises a UserError naming the file when it is missing or malformed.
PublicKey load_public_key(const std::string& path);

/// The detached Ed25519 signature of `digest`.
Signature sign_digest(const Digest& digest, const SecretKey& key);
/// True when `sig` is `key`'s signature of `digest`.
bool verify_digest(const Digest& digest, const Signature& sig, const PublicKey& key);

}  // namespace yoloc::artifact
