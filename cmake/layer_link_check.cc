// The program of each <layer>_link_check target (CMakeLists.txt): linked with every object of one
// dq4 layer and with that layer's dependencies alone, it fails to link when the layer calls into a
// layer above it. It runs nothing.
int main() { return 0; }
