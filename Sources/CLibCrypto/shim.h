#ifndef PUSHTRACK_CLIBCRYPTO_SHIM_H
#define PUSHTRACK_CLIBCRYPTO_SHIM_H
/* libcrypto (OpenSSL 3): only the message digests (EVP_Digest, EVP_MD_fetch). */
#include <openssl/evp.h>
#endif
