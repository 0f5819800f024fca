#include "artifact/signing.h"

#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace yoloc::artifact {

namespace {

void ensure_sodium() {
  static const bool ok = sodium_init() >= 0;
  if (!ok) internal_error("libsodium failed to initialise");
}

const unsigned char* u8(const std::byte* p) { return reinterpret_cast<const unsigned char*>(p); }
unsigned char* u8(std::byte* p) { return reinterpret_cast<unsigned char*>(p); }

template <size_t N>
std::string to_hex(const std::array<std::byte, N>& bytes) {
  std::string hex(2 * N + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), u8(bytes.data()), N);
  hex.pop_back();
  return hex;
}

template <size_t N>
std::array<std::byte, N> read_key(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) user_error("cannot read the {} key file '{}'; check the path", what, path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::array<std::byte, N> key{};
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_hex2bin(u8(key.data()), N, text.data(), text.size(), nullptr, &len, &end) != 0 ||
      len != N || end != text.data() + text.size())
    user_error(
        "the {} key file '{}' does not hold {} hex characters of an Ed25519 {} key; "
        "generate a key pair with yoloc keygen NAME",
        what, path, 2 * N, what);
  return key;
}

}  // namespace

Digest sha256(std::span<const std::byte> data) {
  ensure_sodium();
  Digest d;
  crypto_hash_sha256(u8(d.data()), u8(data.data()), data.size());
  return d;
}

void generate_key_pair(const std::string& secret_path, const std::string& public_path) {
  ensure_sodium();
  PublicKey pk;
  SecretKey sk;
  crypto_sign_keypair(u8(pk.data()), u8(sk.data()));
  // Never over an existing file (a key pair lost is a fleet to re-sign): both paths are checked
  // first, and each is created exclusively. The secret is owner-only from the start.
  for (const std::string* p : {&secret_path, &public_path})
    if (::access(p->c_str(), F_OK) == 0)
      user_error("the key file '{}' exists; keys are never overwritten: choose another name or "
                 "remove it yourself", *p);
  const auto write_new = [](const std::string& path, const std::string& text, mode_t mode) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    const bool ok =
        fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (fd >= 0) ::close(fd);
    return ok;
  };
  std::string secret = to_hex(sk) + "\n";
  const bool ok = write_new(secret_path, secret, 0600);
  sodium_memzero(sk.data(), sk.size());
  sodium_memzero(secret.data(), secret.size());
  if (!ok) user_error("cannot write the secret key file '{}'; check the folder", secret_path);
  if (!write_new(public_path, to_hex(pk) + "\n", 0644)) {
    ::unlink(secret_path.c_str());
    user_error("cannot write the public key file '{}'; check the folder", public_path);
  }
}

SecretKey load_secret_key(const std::string& path) { return read_key<64>(path, "secret"); }

PublicKey load_public_key(const std::string& path) { return read_key<32>(path, "public"); }

Signature sign_digest(const Digest& digest, const SecretKey& key) {
  ensure_sodium();
  Signature sig;
  crypto_sign_detached(u8(sig.data()), nullptr, u8(digest.data()), digest.size(), u8(key.data()));
  return sig;
}

bool verify_digest(const Digest& digest, const Signature& sig, const PublicKey& key) {
  ensure_sodium();
  return crypto_sign_verify_detached(u8(sig.data()), u8(digest.data()), digest.size(),
                                     u8(key.data())) == 0;
}

}  // namespace yoloc::artifact
