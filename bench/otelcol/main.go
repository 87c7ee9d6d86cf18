// A minimal OpenTelemetry Collector for bench/peers_bench.py: the vcenterreceiver and the debug
// exporter, nothing else. Built by bench/otelcol/build.sh.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/vcenterreceiver"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
)

func components() (otelcol.Factories, error) {
	var factories otelcol.Factories
	var err error
	if factories.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](vcenterreceiver.NewFactory()); err != nil {
		return factories, err
	}
	factories.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](debugexporter.NewFactory())
	return factories, err
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-vcenter", Description: "vcenterreceiver + debug exporter", Version: "0.130.0"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
				DefaultScheme:     "env",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
