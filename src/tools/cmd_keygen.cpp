// yoloc keygen NAME: an Ed25519 key pair for signing artifacts (NAME.key, owner-only) and
// trusting them (NAME.pub).
#include <fmt/format.h>

#include "artifact/signing.h"
#include "tools/commands.h"

namespace yoloc::tools {

void add_keygen(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  auto* c = app.add_subcommand(
      "keygen",
      "Write an Ed25519 key pair: NAME.key signs artifacts (compile --sign), NAME.pub trusts "
      "them (--trust, YOLOC_TRUSTED_KEYS)");
  c->add_option("name", *name, "the key pair's path without extension")->required();
  c->callback([name] {
    const std::string secret = *name + ".key", pub = *name + ".pub";
    artifact::generate_key_pair(secret, pub);
    fmt::print(
        "wrote {} (secret: keep it where artifacts are signed) and {} (give it to --trust)\n",
        secret, pub);
  });
}

}  // namespace yoloc::tools
