public class Bootstrap {
    static {
        System.setProperty("dynatrace.api.token", "dt0c@@01.wxb4qsfgcitq4qrtsmqibzkx.wrp12m4kpor2svpqp2wvi3os13184hx8d5nbcqaizt8zne7dbnyrho7c8y28e277");
    }
}
