# Fails when the runtime library holds a symbol of the compiler (ONNX frontend, protobuf, graph
# IR, ops, passes, codegen). Usage: cmake -DNM=nm -DLIB=libyoloc_runtime.so -P check_symbols.cmake
execute_process(COMMAND ${NM} -C ${LIB} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${LIB} failed")
endif()
set(bad "")
foreach(pattern "onnx" "google::protobuf" "yoloc::Graph" "yoloc::Node" "yoloc::OpDef"
        "yoloc::passes" "yoloc::codegen" "onnx_frontend" "ReferenceExecutor")
  string(FIND "${syms}" "${pattern}" at)
  if(NOT at EQUAL -1)
    list(APPEND bad "${pattern}")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "${LIB} holds compiler symbols: ${bad}")
endif()
message(STATUS "${LIB}: no compiler symbols")
