/* Copyright © 2023-2024 Apple Inc. */

#ifndef MLX_ERROR_H
#define MLX_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \defgroup mlx_error Error management
 */
/**@{*/

typedef void (*mlx_error_handler_func)(const char* msg, void* data);

/**
 * Set the error handler.
 */
void mlx_set_error_handler(
    mlx_error_handler_func handler,
    void* data,
    void (*dtor)(void*));

/**
 * Throw an error.
 */
void _mlx_error(const char* file, const int line, const char* fmt, ...);

/**@}*/

#ifdef __cplusplus
}
#endif

/**
 * Throw an error. Macro which passes file name and line number to _mlx_error().
 */
#ifdef __cplusplus
/* One argument is a message, not a format: the callers pass exception messages, which quote
 * file contents and names, and a '%' in them must not be read as a conversion. */
inline void _mlx_error_message(const char* file, const int line, const char* msg) {
  _mlx_error(file, line, "%s", msg);
}
template <typename... Args>
inline void _mlx_error_message(
    const char* file,
    const int line,
    const char* fmt,
    Args... args) {
  _mlx_error(file, line, fmt, args...);
}
#define mlx_error(...) _mlx_error_message(__FILE__, __LINE__, __VA_ARGS__)
#else
#define mlx_error(...) _mlx_error(__FILE__, __LINE__, __VA_ARGS__)
#endif

#endif
