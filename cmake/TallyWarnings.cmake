# Warning flags (and -Werror with TALLY_WERROR) and sanitizers (TALLY_SANITIZE) for tally's own targets.
set(TALLY_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
if(TALLY_SANITIZE)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${TALLY_SANITIZER_FLAGS}>")
  add_link_options(${TALLY_SANITIZER_FLAGS})
endif()

function(tally_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${TALLY_WERROR}>>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${TALLY_WERROR}>>:-Werror=all-warnings -Xcompiler=-Werror>)
endfunction()
