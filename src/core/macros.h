#pragma once
/// Token pasting for unique static-registration names.
#define YOLOC_CONCAT_INNER(a, b) a##b
#define YOLOC_CONCAT(a, b) YOLOC_CONCAT_INNER(a, b)
