package cli

import (
	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/jobschema"
)

func init() { register(newSchemaCmd) }

func newSchemaCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "print the JSON Schema of job YAML files (for editors)",
		Long: "Print the JSON Schema of job YAML files, for editors' completion and checks (for example\n" +
			"yaml-language-server's `# yaml-language-server: $schema=…` comment).",
		Args: checkArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, err := e.stdout.Write(jobschema.JSON())
			return err
		},
	}
}
