/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * C++ symbol names made readable ("_Z6vecAddPfS_S_i" -> "vecAdd(float*,
 * float*, float*, int)"), with the Itanium ABI demangler of libstdc++
 * (__cxa_demangle): a tool that uses it links -lstdc++ (LDLIBS_<tool> in
 * the Makefile).
 */
#ifndef AISCOPE_DEMANGLE_H
#define AISCOPE_DEMANGLE_H

/* A malloc()ed readable name, or NULL when name is not a mangled C++ name
 * (C names, "module+0x..." fallbacks) or cannot be demangled. */
char *demangle(const char *name);

#endif
