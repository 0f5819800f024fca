#pragma once
/// Reading and writing NumPy .npy files (format versions 1.0-3.0, little-endian, C order).
#include <string>

#include "yoloc/tensor.h"

namespace yoloc {

/// Reads a .npy file; raises a UserError naming the file for anything malformed or unsupported
/// (Fortran order, big-endian, object arrays, truncation).
Tensor read_npy(const std::string& path);
/// Writes a .npy file (version 1.0); raises a UserError if the file cannot be written.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace yoloc
