package hydrofeed;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStreamReader;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * Starts a MiniDFSCluster (NameNode RPC 9000, HTTP 9870, three DataNodes, 1 MiB blocks so that
 * small test files span several blocks), writes the client configuration to
 * {@code <workdir>/core-site.xml}, prints "Ready!" and runs until stdin closes.
 */
public final class MiniDfs {
    public static void main(String[] args) throws Exception {
        File work = new File(args.length > 0 ? args[0] : "target/minidfs");
        work.mkdirs();
        Configuration conf = new Configuration();
        conf.set("dfs.blocksize", "1048576");
        conf.set("dfs.namenode.fs-limits.min-block-size", "65536");
        conf.set("hdfs.minidfs.basedir", new File(work, "data").getAbsolutePath());
        HdfsConfiguration hdfsConf = new HdfsConfiguration(conf);
        MiniDFSCluster dfs = new MiniDFSCluster.Builder(hdfsConf)
            .nameNodePort(9000)
            .nameNodeHttpPort(9870)
            .numDataNodes(3)
            .build();
        dfs.waitActive();
        hdfsConf.set("fs.defaultFS", "hdfs://127.0.0.1:9000");
        try (FileOutputStream out = new FileOutputStream(new File(work, "core-site.xml"))) {
            hdfsConf.writeXml(out);
        }
        System.out.println("Ready!");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            // Any line or EOF ends the cluster; EOF covers a parent killed with SIGKILL.
            break;
        }
        dfs.shutdown(true);
    }
}
