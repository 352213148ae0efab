function _ehtool_completion
    set -l response (env _EHTOOL_COMPLETE=fish_complete COMP_WORDS=(commandline -cp) \
        COMP_CWORD=(commandline -t) ehtool)
    for line in $response
        set -l item (string split -m 2 \t -- $line)
        switch $item[1]
            case dir
                __fish_complete_directories $item[2]
            case file
                __fish_complete_path $item[2]
            case command
                __fish_complete_command $item[2]
            case plain
                if test "$item[3]" != _
                    printf '%s\t%s\n' $item[2] $item[3]
                else
                    printf '%s\n' $item[2]
                end
        end
    end
end

complete --no-files --command ehtool --arguments "(_ehtool_completion)"
