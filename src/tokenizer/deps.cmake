# The tokenizer's regexes (PCRE2, 8-bit) and Unicode normalization (utf8proc).
target_link_libraries(or1lib PUBLIC pcre2-8 utf8proc)
