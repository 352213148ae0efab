_ehtool_completion() {
    local IFS=$'\n'
    local response type value
    response=$(env COMP_LINE="${COMP_LINE:0:COMP_POINT}" COMP_WORDS=_ COMP_CWORD=0 \
        EHTOOL_WORDBREAKS="$COMP_WORDBREAKS" _EHTOOL_COMPLETE=bash_complete $1)
    for completion in $response; do
        IFS=',' read type value <<< "$completion"
        case $type in
            dir) COMPREPLY=(); compopt -o dirnames ;;
            file) COMPREPLY=(); compopt -o default ;;
            command) COMPREPLY=($(compgen -c -- "${COMP_WORDS[COMP_CWORD]}")) ;;
            plain) COMPREPLY+=("$value")
                [[ $value == *: ]] && compopt -o nospace ;;  # ':sched:' goes on
        esac
    done
    return 0
}

complete -o nosort -F _ehtool_completion ehtool
