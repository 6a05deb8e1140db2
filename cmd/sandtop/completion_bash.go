package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// bashWithoutBashCompletion goes before cobra's bash script. Cobra's
// script leans on two functions of the bash-completion package
// (_get_comp_words_by_ref to split the line, _filedir to list files);
// where that package is not installed -- minimal images, `bash --norc` --
// every TAB printed "_get_comp_words_by_ref: command not found". These
// stand-ins are defined only when the package has not defined its own, and
// do the little cobra's script asks of them.
const bashWithoutBashCompletion = `# Stand-ins for the bash-completion package's helpers, used only when that
# package is not loaded: sandtop's completion works without it.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref()
{
    # -n CHARS: do not split words at these characters (bash splits
    # --pid=12 into "--pid" "=" "12"); then the names of cur prev words cword.
    local exclude="" opt OPTIND=1
    while getopts "n:" opt; do
        [[ $opt == n ]] && exclude+=$OPTARG
    done
    shift $((OPTIND - 1))
    local -a _w=()
    local _c=0 i w glue=0
    for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
        w=${COMP_WORDS[i]}
        if ((i > 0)) && [[ -n $exclude && -n $w && -z ${w//[$exclude]/} ]]; then
            _w[${#_w[@]}-1]+=$w
            glue=1
        elif ((glue)); then
            _w[${#_w[@]}-1]+=$w
            glue=0
        else
            _w+=("$w")
        fi
        ((i == COMP_CWORD)) && _c=$((${#_w[@]} - 1))
    done
    local _cur=${_w[_c]} _prev=""
    ((_c > 0)) && _prev=${_w[_c-1]}
    while (($#)); do
        case $1 in
        cur) cur=$_cur ;;
        prev) prev=$_prev ;;
        words) words=("${_w[@]}") ;;
        cword) cword=$_c ;;
        esac
        shift
    done
}
fi
if ! declare -F _filedir >/dev/null 2>&1; then
_filedir()
{
    # _filedir -d lists directories; _filedir lists files. (The package's
    # extension filter is not reproduced: every file is offered.)
    local IFS=$'\n'
    if [[ ${1-} == -d ]]; then
        COMPREPLY+=($(compgen -d -- "${cur-}"))
    else
        COMPREPLY+=($(compgen -f -- "${cur-}"))
    fi
    compopt -o filenames 2>/dev/null
}
fi

`

// bashCompletion makes `sandtop completion bash` write the stand-ins above
// before cobra's script (which stays cobra's own, version 2).
func bashCompletion(completion *cobra.Command) {
	b, _, err := completion.Find([]string{"bash"})
	if err != nil || b == completion {
		return
	}
	b.Run = nil
	b.RunE = func(cmd *cobra.Command, _ []string) error {
		noDesc, _ := cmd.Flags().GetBool("no-descriptions")
		out := cmd.OutOrStdout()
		if _, err := io.WriteString(out, bashWithoutBashCompletion); err != nil {
			return fmt.Errorf("completion bash: %w", err)
		}
		return cmd.Root().GenBashCompletionV2(out, !noDesc)
	}
}
