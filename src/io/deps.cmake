# YAML configuration files (libyaml).
target_link_libraries(or1lib PUBLIC yaml)
