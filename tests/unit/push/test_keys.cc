#include "test_keys.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <stdexcept>

namespace pacer::push::test {
namespace {

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

std::string drain(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(len));
}

}  // namespace

PkeyPtr makeEcKey(const char* curve) {
  PkeyPtr key(EVP_EC_gen(curve), &EVP_PKEY_free);
  if (!key) throw std::runtime_error("EC key generation failed");
  return key;
}

PkeyPtr makeRsaKey(unsigned bits) {
  PkeyPtr key(EVP_RSA_gen(bits), &EVP_PKEY_free);
  if (!key) throw std::runtime_error("RSA key generation failed");
  return key;
}

std::string privatePem(EVP_PKEY* key, std::string_view passphrase) {
  BioPtr bio(BIO_new(BIO_s_mem()), &BIO_free);
  const EVP_CIPHER* cipher = passphrase.empty() ? nullptr : EVP_aes_256_cbc();
  std::string pass(passphrase);
  if (PEM_write_bio_PKCS8PrivateKey(bio.get(), key, cipher, pass.empty() ? nullptr : pass.data(),
                                    static_cast<int>(pass.size()), nullptr, nullptr) != 1) {
    throw std::runtime_error("PEM writing failed");
  }
  return drain(bio.get());
}

std::string traditionalPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (PEM_write_bio_PrivateKey_traditional(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    throw std::runtime_error("PEM writing failed");
  }
  return drain(bio.get());
}

bool verifySha256(EVP_PKEY* key, std::string_view input, std::string_view signature) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
}

}  // namespace pacer::push::test
